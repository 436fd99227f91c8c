/**
 * The integrator's client, using only the public REST API (api-v1.md "Endpoints", point 3: the integration sequence):
 * a device Ed25519 key, the device's hash chain kept in a local state file, the anchor call and
 * the receipt saved next to the photo.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { ed25519PublicKeyFromSeed, signEd25519 } from '../crypto/ed25519.js';
import { computeChainHash, hexToBytes } from '../crypto/hash.js';

/** The device key file written by `evidence keygen` (mode 0600: it holds the private key). */
export interface DeviceKeyFile {
  type: 'evidence-device-key';
  version: 1;
  algorithm: 'Ed25519';
  public_key_hex: string;
  /** The 32-byte Ed25519 private key (RFC 8032 seed), hex. */
  private_key_hex: string;
  created_at: string;
}

/** The device chain's state, next to the key file: what the next anchor must continue. */
export interface ChainState {
  type: 'evidence-device-chain';
  public_key_hex: string;
  next_index: number;
  /** chain_hash of the last anchored link; null before the first. */
  last_chain_hash: string | null;
  last_image_hash: string | null;
  last_tx_hash: string | null;
  updated_at: string;
  /**
   * `evidence sync`'s plan (lib/cli/sync.ts): the next links, in chain order, each with the file
   * it anchors and the exact request body, written before any of them is sent. Until each is
   * answered, a run sends them again byte for byte (identical retries) before anything new.
   */
  pending?: PlannedLink[];
}

/** One planned link of `evidence sync`: the photo and the anchor request that anchors it. */
export interface PlannedLink {
  file: string;
  body: AnchorRequestBody;
}

export type AnchorRequestBody = ReturnType<typeof buildAnchorRequest>;

/** A failure the user can act on; `message` says what to do. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A command line the CLI cannot run: the message, then the usage (exit code 2). */
export class UsageError extends Error {}

/** The service a command talks to: --url (else EVIDENCE_URL, else the local one) and the API key of EVIDENCE_API_KEY. */
export function serviceOf(urlFlag: string | undefined, env: NodeJS.ProcessEnv): { url: string; apiKey: string } {
  const apiKey = env.EVIDENCE_API_KEY;
  if (!apiKey) throw new CliError('Set EVIDENCE_API_KEY to an API key of your account (it is shown once, at register or when a key is created).');
  const url = (urlFlag ?? env.EVIDENCE_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url ${url} is not a URL.`);
  }
  return { url, apiKey };
}

/** A new Ed25519 device key (node:crypto), as the key file stores it. */
export function generateDeviceKey(now = new Date()): DeviceKeyFile {
  const { privateKey } = generateKeyPairSync('ed25519');
  // PKCS#8 of Ed25519 ends with the 32-byte seed (RFC 8410 §7).
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' });
  const seed = Uint8Array.from(pkcs8.subarray(pkcs8.length - 32));
  return {
    type: 'evidence-device-key',
    version: 1,
    algorithm: 'Ed25519',
    public_key_hex: Buffer.from(ed25519PublicKeyFromSeed(seed)).toString('hex'),
    private_key_hex: Buffer.from(seed).toString('hex'),
    created_at: now.toISOString(),
  };
}

/** Writes a new key file with mode 0600; refuses to overwrite one (a lost key cannot continue its chain). */
export async function writeKeyFile(file: string, key: DeviceKeyFile): Promise<void> {
  let handle;
  try {
    handle = await open(file, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new CliError(`${file} already exists: it may hold a device key and its chain. Choose another file with --out.`);
    }
    throw error;
  }
  try {
    await handle.writeFile(`${JSON.stringify(key, null, 2)}\n`);
  } finally {
    await handle.close();
  }
  // The umask may have cleared bits, never added them; chmod makes 0600 explicit anyway.
  await chmod(file, 0o600);
}

/** Reads and checks a key file. */
export async function readKeyFile(file: string): Promise<DeviceKeyFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`No device key at ${file}: create one with "evidence keygen --out ${file}".`);
    throw error;
  }
  let key: Partial<DeviceKeyFile>;
  try {
    key = JSON.parse(text) as Partial<DeviceKeyFile>;
  } catch {
    throw new CliError(`${file} is not a device key file (not JSON).`);
  }
  if (key.type !== 'evidence-device-key' || typeof key.private_key_hex !== 'string' || !/^[0-9a-f]{64}$/.test(key.private_key_hex)) {
    throw new CliError(`${file} is not a device key file written by "evidence keygen".`);
  }
  const publicKey = Buffer.from(ed25519PublicKeyFromSeed(hexToBytes(key.private_key_hex))).toString('hex');
  if (key.public_key_hex !== publicKey) throw new CliError(`${file} is damaged: its public key does not belong to its private key.`);
  return key as DeviceKeyFile;
}

/** The chain state file that belongs to a key file: `device-key.json` → `device-key.chain.json`. */
export function chainStatePath(keyFile: string): string {
  const ext = path.extname(keyFile);
  return ext === '.json' ? `${keyFile.slice(0, -ext.length)}.chain.json` : `${keyFile}.chain.json`;
}

/** The chain state, or a fresh one (index 0) when the key has never anchored. */
export async function readChainState(file: string, publicKeyHex: string): Promise<ChainState> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return { type: 'evidence-device-chain', public_key_hex: publicKeyHex, next_index: 0, last_chain_hash: null, last_image_hash: null, last_tx_hash: null, updated_at: new Date(0).toISOString() };
  }
  const state = JSON.parse(text) as ChainState;
  if (state.public_key_hex !== publicKeyHex) throw new CliError(`${file} belongs to another device key (${String(state.public_key_hex).slice(0, 16)}…).`);
  if (!Number.isSafeInteger(state.next_index) || state.next_index < 0) throw new CliError(`${file} is damaged: next_index is not a non-negative integer.`);
  if (state.next_index > 0 && (typeof state.last_chain_hash !== 'string' || !/^[0-9a-f]{64}$/.test(state.last_chain_hash))) {
    throw new CliError(`${file} is damaged: last_chain_hash is missing.`);
  }
  const pending = state.pending ?? [];
  if (!Array.isArray(pending) || pending.some((p, i) => typeof p?.file !== 'string' || p.body?.chain_index !== state.next_index + i)) {
    throw new CliError(`${file} is damaged: its sync plan (pending) does not continue the chain.`);
  }
  return state;
}

/** Writes the state atomically (temporary file + rename), so a crash never leaves half a file. */
export async function writeChainState(file: string, state: ChainState): Promise<void> {
  await writeFileAtomically(file, `${JSON.stringify(state, null, 2)}\n`, 0o600);
}

/** Writes a file whole or not at all (a temporary file, flushed, then renamed over it). */
export async function writeFileAtomically(file: string, text: string | Uint8Array, mode = 0o644): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  const handle = await open(tmp, 'w', mode);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}

/**
 * Holds `<file>.lock` while `work` runs: two anchors with one key would race for one chain index.
 * The lock names its process; a lock whose process is gone (killed: SIGKILL leaves it behind) is
 * taken over, so that a run after a kill just goes on. (Two runs that find the same dead lock at
 * the same instant could both take it over: the window is the read-compare-remove below.)
 */
export async function withLock<T>(file: string, work: () => Promise<T>): Promise<T> {
  const lock = `${file}.lock`;
  let handle;
  for (let attempt = 0; !handle; attempt++) {
    try {
      handle = await open(lock, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readFile(lock, 'utf8').catch(() => '');
      if (attempt === 0 && /^\d+$/.test(holder) && !processAlive(Number(holder))) {
        await rm(lock, { force: true });
        continue;
      }
      throw new CliError(`Another "evidence" command is using this device chain (${lock} exists${/^\d+$/.test(holder) ? `, held by process ${holder}` : ''}). If none is running, delete that file.`);
    }
  }
  try {
    await handle.writeFile(String(process.pid));
    await handle.close();
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}

/** Whether a process of this machine with this id runs (EPERM: it runs as another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** SHA-256 of a file, streamed; `onProgress` gets the bytes read so far. */
export async function sha256File(file: string, onProgress?: (done: number, total: number) => void): Promise<{ hash: string; size: number }> {
  let size: number;
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new CliError(`${file} is not a file.`);
    size = info.size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`No such file: ${file}`);
    throw error;
  }
  const hash = createHash('sha256');
  let done = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    done += (chunk as Buffer).length;
    onProgress?.(done, size);
  }
  return { hash: hash.digest('hex'), size };
}

/** The anchor request body for the next link of the chain (decisions.md "Device chains"). */
export function buildAnchorRequest(key: DeviceKeyFile, state: ChainState, imageHash: string) {
  const previous = state.next_index === 0 ? null : state.last_chain_hash;
  const chainHash = computeChainHash(previous, imageHash);
  // The device signs the 32 raw bytes of image_hash.
  const signature = signEd25519(hexToBytes(key.private_key_hex), hexToBytes(imageHash));
  return {
    sha256_hash: imageHash,
    chain_index: state.next_index,
    chain_hash: chainHash,
    previous_hash: previous,
    signature_hex: Buffer.from(signature).toString('hex'),
    public_key_hex: key.public_key_hex,
  };
}

/** What the anchor endpoint answers (api-v2.md "Anchor result"). */
export interface AnchorResult {
  status: 'anchored';
  image_hash: string;
  server_hash: string;
  anchored_at: string;
  blockchain_anchored: boolean;
  tx_hash: string;
  ledgerscan_url: string;
}

/** A problem+json error from the service, with what it means for the user. */
export function explainApiError(status: number, problem: { code?: string; detail?: string; next_index?: number }, retryAfter: string | null, context: { file: string; keyFile: string; imageHash: string; url: string }): string {
  const detail = problem.detail ? ` The service said: ${problem.detail}` : '';
  switch (status) {
    case 400:
      return `The service refused the request (400 ${problem.code ?? 'bad_request'}).${detail}`;
    case 401:
      return `The API key was refused (401). Check EVIDENCE_API_KEY: it must be an active key of your account (create one with POST /api/v2/account/keys).${detail}`;
    case 403:
      return `Your tier does not include anchoring (403). Anchoring needs the Pro or Enterprise tier: upgrade the account, then run the command again.${detail}`;
    case 409:
      if (problem.code === 'chain_index_conflict') {
        return (
          `The device chain in ${chainStatePath(context.keyFile)} is out of step with the service (409 chain_index_conflict` +
          `${problem.next_index !== undefined ? `, next free index ${problem.next_index}` : ''}). Was this key used from another copy of its state file? ` +
          'Restore the newest state file; nothing was anchored.'
        );
      }
      return (
        `This file is already anchored (409 ${problem.code ?? 'conflict'}): run "evidence verify ${context.file}". ` +
        `If you have no receipt for it, download it: curl -o '${context.file}.receipt.json' ${context.url}/api/v2/evidence/receipt/${context.imageHash}`
      );
    case 413:
      return `The request was too large (413).${detail}`;
    case 429: {
      const wait = retryAfter && /^\d+$/.test(retryAfter) ? `${retryAfter} seconds` : 'a while';
      const which = problem.code === 'quota_exceeded' ? 'The monthly quota is used up' : 'The rate limit was hit';
      return `${which} (429): wait ${wait}, then run the command again.${problem.code === 'quota_exceeded' ? ' A higher tier raises the quota.' : ''}${detail}`;
    }
    case 503:
      return `The service cannot anchor right now (503); nothing was recorded. Retry in ${retryAfter ?? 'a few'} seconds.${detail}`;
    default:
      return `The service answered ${status}.${detail}`;
  }
}

export interface HttpAnswer {
  status: number;
  body: unknown;
  retryAfter: string | null;
}

/** One JSON request with a timeout; a service that cannot be reached is a CliError that names the URL. */
export async function requestJson(url: string, init: RequestInit = {}, timeoutMs = 60_000): Promise<HttpAnswer> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name === 'TimeoutError') throw new CliError(`No answer from ${new URL(url).origin} within ${timeoutMs / 1000} s.`);
    throw new CliError(`Cannot reach the service at ${new URL(url).origin}: is it running, and is --url right?`);
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? (JSON.parse(text) as unknown) : null;
  } catch {
    // Not JSON: kept as text for the message.
  }
  return { status: response.status, body, retryAfter: response.headers.get('retry-after') };
}

export interface AnchorFileOptions {
  file: string;
  keyFile: string;
  /** Base URL of the service, without a trailing slash. */
  url: string;
  apiKey: string;
  progress: (line: string) => void;
}

export interface AnchorFileResult {
  anchor: AnchorResult;
  receiptFile: string;
  chainIndex: number;
}

/**
 * Hashes, signs and anchors a file, moves the chain state on, downloads the receipt and saves it
 * as `<file>.receipt.json`. The chain state changes only after the service accepted the link.
 */
export async function anchorFile(options: AnchorFileOptions): Promise<AnchorFileResult> {
  const { file, keyFile, url, apiKey, progress } = options;
  const key = await readKeyFile(keyFile);
  const stateFile = chainStatePath(keyFile);

  const { hash: imageHash, size } = await hashWithProgress(file, progress);

  return withLock(stateFile, async () => {
    const state = await readChainState(stateFile, key.public_key_hex);
    if (state.pending?.length) {
      throw new CliError(
        `An "evidence sync" of this device chain is not finished (${state.pending.length} planned link${state.pending.length === 1 ? '' : 's'} in ${stateFile}, the first ${state.pending[0]?.file}): run "evidence sync" on that folder again first, so that the chain goes on from where it stopped.`,
      );
    }
    const body = buildAnchorRequest(key, state, imageHash);
    progress(`Signed with device key ${key.public_key_hex.slice(0, 16)}… as chain link ${body.chain_index}.`);
    progress(`Anchoring at ${url} (ML-DSA-65 signature, RFC 3161 timestamp, ledger transaction)…`);
    const answer = await requestJson(`${url}/api/v2/evidence/anchor`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(body),
    });
    if (answer.status !== 200) {
      const problem = typeof answer.body === 'object' && answer.body !== null ? (answer.body as Record<string, never>) : {};
      throw new CliError(explainApiError(answer.status, problem, answer.retryAfter, { file, keyFile, imageHash, url }));
    }
    const anchor = answer.body as AnchorResult;
    await writeChainState(stateFile, {
      type: 'evidence-device-chain',
      public_key_hex: key.public_key_hex,
      next_index: body.chain_index + 1,
      last_chain_hash: body.chain_hash,
      last_image_hash: imageHash,
      last_tx_hash: anchor.tx_hash,
      updated_at: new Date().toISOString(),
    });
    progress(`Anchored ${path.basename(file)} (${formatBytes(size)}) at ${anchor.anchored_at}; ledger transaction ${anchor.tx_hash}${anchor.blockchain_anchored ? '' : ' (not mined yet)'}.`);

    const receiptFile = `${file}.receipt.json`;
    progress('Downloading the receipt…');
    const receipt = await requestJson(`${url}/api/v2/evidence/receipt/${imageHash}`, { headers: { accept: 'application/json' } });
    if (receipt.status !== 200) {
      throw new CliError(
        `Anchored, but the receipt could not be downloaded (HTTP ${receipt.status}). Download it later: curl -o '${receiptFile}' ${url}/api/v2/evidence/receipt/${imageHash}`,
      );
    }
    await writeFileAtomically(receiptFile, `${JSON.stringify(receipt.body, null, 2)}\n`);
    return { anchor, receiptFile, chainIndex: body.chain_index };
  });
}

/** Hashes a file, printing progress for files large enough to take a moment. */
export async function hashWithProgress(file: string, progress: (line: string) => void): Promise<{ hash: string; size: number }> {
  const size = await stat(file).then((s) => s.size, () => 0);
  const large = size >= 32 * 1024 * 1024;
  progress(`Hashing ${path.basename(file)} (${formatBytes(size)}) with SHA-256…`);
  let nextReport = 0.25;
  const result = await sha256File(file, (done, total) => {
    if (large && total > 0 && done / total >= nextReport && done < total) {
      progress(`  ${Math.floor((done / total) * 100)}%`);
      nextReport += 0.25;
    }
  });
  progress(`SHA-256 ${result.hash}`);
  return result;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}
