/**
 * Entry of the dynalite child process that `npm start` supervises (lib/local/dynamo-process.ts):
 * `node lib/local/dynamo-child.mjs` with DYNAMO_CHILD_PORT, DYNAMO_CHILD_DIR (the data directory;
 * empty: in memory) and an IPC channel. Plain JavaScript, so that it starts without the
 * TypeScript loader (about 0.3 s instead of 0.8 s). It tells its parent `{ type: 'ready', port }`
 * or `{ type: 'failed', code, message }`, stops on SIGTERM/SIGINT, and exits by itself as soon as the
 * parent is gone, however it went (the IPC channel closes; or it finds itself re-parented).
 * dynalite and its store are built by dynalite-store.mjs (items on disk in SQLite), as for
 * startEmbeddedDynamo (dynamo-server.ts).
 */
import { createDynalite } from './dynalite-store.mjs';

const tell = (message) => {
  if (process.connected) process.send(message);
};
const port = Number(process.env.DYNAMO_CHILD_PORT || '0');
const dir = process.env.DYNAMO_CHILD_DIR || undefined;
const server = await createDynalite(dir ? { dir } : {});

let stopping = false;
function stop(code) {
  if (stopping) return;
  stopping = true;
  // Closing lets leveldb finish its writes; a close that hangs does not keep the port.
  setTimeout(() => process.exit(code), 2000).unref();
  server.close(() => process.exit(code));
  server.closeAllConnections?.();
}
process.once('SIGTERM', () => stop(0));
process.once('SIGINT', () => stop(0));
const parent = process.ppid;
if (process.connected) {
  process.once('disconnect', () => stop(0));
  process.channel?.unref();
}
setInterval(() => {
  if (process.ppid !== parent) stop(0);
}, 250).unref();

server.once('error', (error) => {
  const failed = { type: 'failed', code: error.code, message: error.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is already in use` : error.message };
  // Exit once the message is sent: an exit right after send() can lose it, and the parent would
  // then only see an exit with code 1.
  if (process.connected) process.send(failed, () => process.exit(1));
  else process.exit(1);
});
server.listen(port, '127.0.0.1', () => tell({ type: 'ready', port: server.address().port }));
