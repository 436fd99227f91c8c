/**
 * `evidence sync <folder>`: a phone's sync, from the command line (docs/decisions.md "Batch
 * anchoring"). Every photo of the folder without a receipt becomes the next link of the device
 * chain; the links go to POST /api/v2/evidence/anchor/batch, 100 to a request; each receipt is
 * saved beside its photo.
 *
 * Killed at any point and run again, it completes the folder without a fork, a duplicate or a
 * double charge, because every step is written down before the next one starts:
 * 1. plan: the new links (file, exact request body) are appended to the chain state's `pending`
 *    and the state written (atomically) before anything is sent;
 * 2. send: the planned links, oldest first, byte for byte as planned: a link the service anchored
 *    before the kill answers 200 again (an identical retry: no second anchor, no second charge);
 * 3. record: each anchored photo's receipt is saved (atomically) beside it, and the chain state
 *    moves on over the links answered 200 from the first planned one on; the rest stay planned.
 * A photo that turns out anchored already (409 hash_already_anchored: another chain or an earlier
 * run holds it) gets that anchor's receipt and leaves the plan; the links planned after it, which
 * the service did not write (409 previous_entry_failed), are planned again from its position.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  type AnchorResult,
  buildAnchorRequest,
  type ChainState,
  chainStatePath,
  CliError,
  explainApiError,
  type HttpAnswer,
  type PlannedLink,
  readChainState,
  readKeyFile,
  requestJson,
  sha256File,
  withLock,
  writeChainState,
  writeFileAtomically,
} from './client.js';

/** Most entries in one batch request (the endpoint's limit). */
export const SYNC_CHUNK = 100;
/** Tries of one request that the service answers 503 (it asks to retry the identical request). */
const TRIES_ON_503 = 4;

export interface SyncIo {
  err(line: string): void;
  status?(text: string): void;
}

export interface SyncOptions {
  folder: string;
  keyFile: string;
  url: string;
  apiKey: string;
  io: SyncIo;
  /** Entries per request (default {@link SYNC_CHUNK}). */
  chunk?: number;
}

export interface SyncResult {
  /** Links to anchor this run: those an earlier run left planned and the new photos. */
  total: number;
  /** Of them, anchored (answered 200). */
  anchored: number;
  /** Receipts saved. */
  receipts: number;
  /** What the user should know (a photo anchored before, a receipt that could not be fetched). */
  notes: string[];
}

type Problem = { code?: string; detail?: string; next_index?: number; retry_after?: number };
type BatchResult = { status: number; anchor?: AnchorResult; problem?: Problem };

export async function syncFolder(options: SyncOptions): Promise<SyncResult> {
  const { io, url, apiKey } = options;
  const chunkSize = Math.min(SYNC_CHUNK, Math.max(1, options.chunk ?? SYNC_CHUNK));
  const key = await readKeyFile(options.keyFile);
  const stateFile = chainStatePath(options.keyFile);
  return withLock(stateFile, async () => {
    let state = await readChainState(stateFile, key.public_key_hex);
    const notes: string[] = [];

    // 1. Plan: what an earlier run planned stays first; the new photos follow.
    const planned = new Set((state.pending ?? []).map((p) => p.file));
    const own = new Set([options.keyFile, stateFile].map((f) => path.resolve(f)));
    const fresh = (await photosWithoutReceipt(options.folder)).filter((f) => !planned.has(f) && !own.has(f));
    if ((state.pending?.length ?? 0) > 0) io.err(`Resuming the sync: ${state.pending?.length} link(s) planned by an earlier run are sent again first, unchanged.`);
    if (fresh.length > 0) {
      const hashed: { file: string; hash: string }[] = [];
      for (const file of fresh) hashed.push({ file, hash: (await sha256File(file)).hash });
      state = plan(key, state, hashed);
      await writeChainState(stateFile, state);
    }
    const total = state.pending?.length ?? 0;
    if (total === 0) return { total: 0, anchored: 0, receipts: 0, notes };
    io.err(`Anchoring ${total} photo(s) of ${options.folder} at ${url}, ${chunkSize} to a request, from chain link ${state.next_index}.`);

    // 2 and 3: send the plan, a chunk at a time; record what was answered.
    let anchored = 0;
    let receipts = 0;
    const progress = () => (io.status ? io.status(`synced ${anchored}/${total}`) : io.err(`synced ${anchored}/${total}`));
    for (let tries503 = 0; (state.pending?.length ?? 0) > 0; ) {
      const chunk = (state.pending ?? []).slice(0, chunkSize);
      const answer = await send(url, apiKey, chunk);
      if (answer.status !== 200) {
        if (answer.status === 503 && ++tries503 < TRIES_ON_503) {
          await pause(answer.retryAfter);
          continue;
        }
        throw new CliError(`${explainApiError(answer.status, asProblem(answer.body), answer.retryAfter, context(chunk[0], options, url))} ${KEPT}`);
      }
      const results = (answer.body as { results?: BatchResult[] }).results ?? [];
      if (results.length !== chunk.length) throw new CliError(`The service answered ${results.length} results for ${chunk.length} entries. ${KEPT}`);

      // Receipts of every anchored photo of the chunk, whatever came before it.
      const done = chunk.filter((_, i) => results[i]?.status === 200);
      const saved = await saveReceipts(url, done, notes);
      receipts += saved;
      // The chain moves on over the links answered 200 from the first planned one on.
      let prefix = 0;
      while (prefix < chunk.length && results[prefix]?.status === 200) prefix++;
      if (prefix > 0) {
        const last = chunk[prefix - 1] as PlannedLink;
        state = {
          ...state,
          next_index: last.body.chain_index + 1,
          last_chain_hash: last.body.chain_hash,
          last_image_hash: last.body.sha256_hash,
          last_tx_hash: results[prefix - 1]?.anchor?.tx_hash ?? null,
          updated_at: new Date().toISOString(),
          pending: (state.pending ?? []).slice(prefix),
        };
        anchored += prefix;
        tries503 = 0;
      }
      const failed = results[prefix];
      const link = chunk[prefix];
      if (failed && link) {
        const problem = failed.problem ?? {};
        const laterAnchored = results.slice(prefix + 1).some((r) => r.status === 200);
        if (failed.status === 409 && problem.code === 'hash_already_anchored' && problem.retry_after === undefined && !laterAnchored) {
          // Anchored before (by another chain, or an earlier anchor of this photo): its receipt is
          // the photo's; the links planned after it were not written and are planned again.
          if ((await saveReceipts(url, [link], notes)) === 1) receipts++;
          notes.push(`${path.basename(link.file)} was anchored before this sync; its receipt is saved beside it.`);
          const rest = (state.pending ?? []).slice(1).map((p) => ({ file: p.file, hash: p.body.sha256_hash }));
          state = plan(key, { ...state, pending: [] }, rest);
        } else if (failed.status === 503 || (failed.status === 409 && problem.retry_after !== undefined)) {
          if (++tries503 >= TRIES_ON_503) {
            await writeChainState(stateFile, state);
            throw new CliError(`${explainApiError(failed.status, problem, String(problem.retry_after ?? ''), context(link, options, url))} ${KEPT}`);
          }
          await pause(problem.retry_after === undefined ? null : String(problem.retry_after));
        } else {
          await writeChainState(stateFile, state);
          throw new CliError(`${path.basename(link.file)}: ${explainApiError(failed.status, problem, String(problem.retry_after ?? ''), context(link, options, url))} ${KEPT}`);
        }
      }
      await writeChainState(stateFile, state);
      progress();
    }
    if (io.status) io.err('');
    return { total, anchored, receipts, notes };
  });
}

const KEPT = 'The sync plan is kept beside the device key: run the same command again to finish.';

/** Appends links for `photos` to the plan, continuing the chain from its last planned (or anchored) link. */
function plan(key: Awaited<ReturnType<typeof readKeyFile>>, state: ChainState, photos: { file: string; hash: string }[]): ChainState {
  const pending = [...(state.pending ?? [])];
  for (const { file, hash } of photos) {
    const last = pending.at(-1);
    const from: ChainState = last ? { ...state, next_index: last.body.chain_index + 1, last_chain_hash: last.body.chain_hash } : state;
    pending.push({ file, body: buildAnchorRequest(key, from, hash) });
  }
  return { ...state, pending, updated_at: new Date().toISOString() };
}

/** The folder's photos (regular files, not hidden) that have no `<file>.receipt.json`, by name. */
async function photosWithoutReceipt(folder: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`No such folder: ${folder}`);
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new CliError(`${folder} is not a folder.`);
    throw error;
  }
  const names = new Set(entries.map((e) => e.name));
  return entries
    .filter((e) => e.isFile() && !e.name.startsWith('.') && !/\.(receipt\.json|tmp|lock)$/.test(e.name) && !names.has(`${e.name}.receipt.json`))
    .map((e) => path.resolve(folder, e.name))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function send(url: string, apiKey: string, chunk: PlannedLink[]): Promise<HttpAnswer> {
  return requestJson(`${url}/api/v2/evidence/anchor/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ anchors: chunk.map((p) => p.body) }),
  }).catch((error: unknown) => {
    throw error instanceof CliError ? new CliError(`${error.message} ${KEPT}`) : error;
  });
}

/** Downloads and saves the receipts of anchored links, 8 at a time; returns how many were saved. */
async function saveReceipts(url: string, links: PlannedLink[], notes: string[]): Promise<number> {
  let saved = 0;
  const queue = [...links];
  await Promise.all(
    Array.from({ length: Math.min(8, queue.length) }, async () => {
      for (let link = queue.shift(); link; link = queue.shift()) {
        const answer = await requestJson(`${url}/api/v2/evidence/receipt/${link.body.sha256_hash}`, { headers: { accept: 'application/json' } }).catch(() => null);
        if (answer?.status === 200) {
          await writeFileAtomically(`${link.file}.receipt.json`, `${JSON.stringify(answer.body, null, 2)}\n`);
          saved++;
        } else {
          notes.push(`${path.basename(link.file)} is anchored, but its receipt could not be downloaded: curl -o '${link.file}.receipt.json' ${url}/api/v2/evidence/receipt/${link.body.sha256_hash}`);
        }
      }
    }),
  );
  return saved;
}

function asProblem(body: unknown): Problem {
  return typeof body === 'object' && body !== null ? (body as Problem) : {};
}

function context(link: PlannedLink | undefined, options: SyncOptions, url: string) {
  return { file: link?.file ?? options.folder, keyFile: options.keyFile, imageHash: link?.body.sha256_hash ?? '', url };
}

/** Waits what Retry-After asks (at most 10 s; 1 s without one). */
function pause(retryAfter: string | null): Promise<void> {
  const seconds = retryAfter && /^\d+$/.test(retryAfter) ? Math.min(10, Number(retryAfter)) : 1;
  return new Promise((r) => setTimeout(r, seconds * 1000));
}
