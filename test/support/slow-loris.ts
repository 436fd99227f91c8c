import net from 'node:net';

/**
 * A slow-loris client: sends `head`, then `drip` every `everyMs` without ever finishing the
 * request, until the server closes the connection (resolves with what it answered) or `deadlineMs`
 * passes (rejects: the connection was still open). The deadline is a liveness bound, not a speed
 * claim: the server's timeouts here are a few seconds.
 */
export function slowLoris(url: string, head: string, drip: string, options: { everyMs?: number; deadlineMs?: number } = {}): Promise<{ answer: string }> {
  const { everyMs = 100, deadlineMs = 30_000 } = options;
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    // The drip starts once the head is written: a socket is writable before it connects, and a
    // drip queued ahead of the head (a connect slower than `everyMs`, on a loaded machine) makes the
    // request malformed (400) instead of slow.
    const socket = net.connect(Number(target.port), target.hostname, () => {
      socket.write(head);
      timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(drip);
      }, everyMs);
    });
    let answer = '';
    const deadline = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`the server still held the connection open after ${deadlineMs} ms of a request that never finishes`));
    }, deadlineMs);
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('error', () => undefined); // a reset once the server closed: the close below still comes
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(deadline);
      resolve({ answer });
    });
  });
}
