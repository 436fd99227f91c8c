/** abstract-level over node:sqlite (see sqlite-level.mjs). */
export const SQLITE_FILE: string;
export const IN_MEMORY: string;
export class SqliteLevel {
  stageWrite(key: string, staged: { type: 'put' | 'del'; ops: { type: 'put' | 'del'; key: string; value?: string }[]; change?: { table: string; record: string } }): void;
  readChanges(table: string, after: number, limit: number): { seq: number; rec: string }[];
  trimChanges(table: string, upTo: number): void;
  constructor(location: string, options?: object);
  readonly location: string;
  open(): Promise<void>;
  close(): Promise<void>;
}
