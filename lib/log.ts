/**
 * One JSON object per line on stdout (CloudWatch and `npm start` alike). Callers pass only
 * what is safe to keep: never headers, bodies, keys, tokens or passwords.
 */
type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A setting (LOG_LEVEL, setLogLevel), not a cache (no lazy). */
let threshold: Level = (process.env.LOG_LEVEL as Level | undefined) ?? 'info';
if (!(threshold in ORDER)) threshold = 'info';

/** Changes the minimum level written (tests silence routine lines with `warn`). */
export function setLogLevel(level: Level): void {
  threshold = level;
}

function write(level: Level, msg: string, fields?: Record<string, unknown>): void {
  if (ORDER[level] < ORDER[threshold]) return;
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }, (_k, v: unknown) =>
    typeof v === 'bigint' ? v.toString() : v,
  );
  process.stdout.write(`${line}\n`);
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};

/** The name and message of an error, without stack or SDK metadata, for a log line. */
export function describeError(error: unknown): { error: string; message: string } {
  if (error instanceof Error) return { error: error.name, message: error.message };
  return { error: typeof error, message: String(error) };
}
