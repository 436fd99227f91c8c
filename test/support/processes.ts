import { readFileSync } from 'node:fs';

/**
 * Whether process `pid` is running: it exists and is not a zombie (an exited child that nobody
 * reaped yet, as in a container whose init does not reap, counts as gone).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
