/** Types of infra/deploy-params.cjs (CommonJS for osls). */
export interface DeployParameter {
  param: string;
  path: string;
  kind: string;
  edge?: boolean;
  optional?: boolean;
  /** A file that may be absent (its absence means the empty default). */
  absentFileOk?: boolean;
}
export const PARAMETERS: DeployParameter[];
export const PLACEHOLDER_STAGES: Set<string>;
export function parameterProblems(options: {
  get(path: string): unknown;
  readFile(relativePath: string): Buffer | undefined | Promise<Buffer | undefined>;
  edge: boolean;
  keysDir: string | undefined;
  region: string | undefined;
}): Promise<string[]>;
export function valueProblems(kind: string, value: unknown, region?: string): string[];
export function fileContentProblems(kind: string, content: Buffer): string[];
export function isPlaceholder(value: string): boolean;
