/** abstract-level over node:sqlite (see sqlite-level.mjs). */
export const SQLITE_FILE: string;
export class SqliteLevel {
  constructor(location: string, options?: object);
  readonly location: string;
  open(): Promise<void>;
  close(): Promise<void>;
}
