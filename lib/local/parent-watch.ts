import { readFileSync } from 'node:fs';

/**
 * A process of the local stack exits when the process that started it is gone, however it went
 * (SIGKILL included): at once when its IPC channel to the parent closes, and otherwise within
 * `intervalMs` when it notices it was re-parented. With `grandparent` (npm start: npm → sh →
 * node) and a shell as the parent, also when the shell's parent is gone (Linux, where /proc
 * tells it): a SIGKILLed npm leaves its shell waiting for this process forever. Nothing here keeps the process alive.
 */
export function exitWithParent(onGone: (why: string) => void, options: { intervalMs?: number; grandparent?: boolean } = {}): void {
  const parent = process.ppid;
  // Only through a shell that waits for this process (dash does; bash would have exec'd it).
  const grandparent = options.grandparent && /^(sh|dash|bash|ash|zsh)$/.test(commOf(parent)) ? parentOf(parent) : undefined;
  let gone = false;
  const fire = (why: string) => {
    if (gone) return;
    gone = true;
    onGone(why);
  };
  if (process.connected) {
    process.once('disconnect', () => fire('its parent closed the IPC channel'));
    process.channel?.unref();
  }
  const timer = setInterval(() => {
    if (process.ppid !== parent) fire(`its parent (pid ${parent}) is gone`);
    else if (grandparent !== undefined && grandparent > 1 && parentOf(parent) !== grandparent) fire(`the process that started it (pid ${grandparent}) is gone`);
  }, options.intervalMs ?? 250);
  timer.unref();
}

/** The parent pid of `pid` from /proc (Linux); undefined elsewhere or when it is gone. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** The command name of `pid` from /proc (Linux); '' elsewhere. */
function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}
