/**
 * A child of the local stack exits when the process that started it is gone, however it went
 * (SIGKILL included): at once when its IPC channel to the parent closes, and otherwise within
 * `intervalMs` when it notices it was re-parented. Nothing here keeps the process alive.
 */
export function exitWithParent(onGone: (why: string) => void, intervalMs = 250): void {
  const parent = process.ppid;
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
  }, intervalMs);
  timer.unref();
}
