/** Polls `check` until it returns a value other than undefined, or throws `what` at the deadline. */
export async function waitFor<T>(what: string, deadlineMs: number, check: () => Promise<T | undefined> | T | undefined, everyMs = 100): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, everyMs));
  }
}
