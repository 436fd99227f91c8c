import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ML_DSA_65_PUBLIC_KEY_BYTES, mlDsaKeyId } from '../crypto/ml-dsa.js';
import type { PqSigner } from '../crypto/ports.js';
import { decodePqKeyData, encodePqKeyData, pqKeyFingerprint } from '../ledger/anchor-data.js';
import type { RpcReader } from '../ledger/rpc-reader.js';
import { describeError, log } from '../log.js';
import type { PqKeyRegistration, PqRegistrationStore } from './ports.js';
import type { StatsPort } from './stats.js';

/**
 * Publishing the ML-DSA-65 public key on the ledger (GET /api/v1/pq/registration).
 *
 * One 0-value self-transaction of the service wallet carries `ML-DSA-65:` || SHA-256(public key)
 * (lib/ledger/anchor-data.ts). Anyone can then check that the key which signs the evidence was
 * announced, by this wallet, at a block that predates the evidence signed with it.
 *
 * The registration is recorded once per key (the store keeps it in the ledger table:
 * lib/store/pq-registration-table.ts). A claim under a lease takes the record before anything is
 * sent, so of any number of concurrent runs exactly one sends the transaction; the others wait for
 * its hash. A new key (rotation) has a new fingerprint and hence its own record and transaction.
 */

/** What registering needs of the ledger sender (lib/ledger/sender.ts fits it). */
export interface PqRegistrationLedger {
  readonly chainId: number;
  address(): Promise<string>;
  submit(data: string, meta: { kind: 'pq-key'; ref: string }): Promise<{ txHash: string; nonce: number }>;
  waitForReceipt(txHash: string, timeoutMs: number): Promise<{ status: 'confirmed' | 'failed'; blockNumber: number } | null>;
  /**
   * The wallet's persisted transactions, to adopt one sent by a run that died before recording its
   * hash (only read when taking over an expired claim).
   */
  listSlots?(fromNonce?: number): Promise<{ kind: string; ref: string; tx_hash: string; nonce: number; status: string }[]>;
}

/** Dependencies of {@link ensurePqKeyRegistered}. */
export interface PqRegistrationDeps {
  store: PqRegistrationStore;
  signer: Pick<PqSigner, 'publicKey'>;
  ledger: PqRegistrationLedger;
  /** How long to await the receipt before answering `sent` (the transaction still completes). */
  receiptTimeoutMs: number;
  stats?: StatsPort;
  clock?: () => Date;
  /** How long a claim protects a run that is sending; after it another run may take over. Default 2 min. */
  claimTtlMs?: number;
  /** How long a run that lost the claim waits for the winner's transaction hash. Default 30 s. */
  waitForOtherMs?: number;
  /** Poll interval of that wait. Default 100 ms. */
  pollMs?: number;
}

/** Thrown when another run holds the claim and did not record a transaction in time. */
export class PqRegistrationInProgressError extends Error {
  constructor(readonly fingerprint: string) {
    super(`Another run is registering the ML-DSA-65 key ${fingerprint.slice(0, 16)}… and has not sent its transaction yet; retry in a minute.`);
    this.name = 'PqRegistrationInProgressError';
  }
}

const DEFAULT_CLAIM_TTL_MS = 120_000;
const SLOT_LIVE = new Set(['signed', 'sent', 'confirmed']);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export type { PqKeyRegistration, PqRegistrationState, PqRegistrationStore } from './ports.js';

/**
 * Registers the signer's ML-DSA-65 public key fingerprint on the ledger, once and idempotently:
 * - already sent or confirmed: nothing is sent; a `sent` one gets its receipt awaited and recorded;
 * - not yet: the record is claimed with a conditional put, the transaction sent, its hash recorded
 *   (conditional on the claim) and its receipt awaited up to `receiptTimeoutMs`;
 * - claimed by a concurrent run: waits for that run's transaction instead of sending a second one;
 * - a claim whose run died (expired) is taken over; a transaction that run had already sent (found
 *   among the wallet's persisted transactions) is adopted rather than sent again;
 * - a `failed` (reverted) transaction is replaced by a new one.
 *
 * `npm run admin -- register-pq-key` and `npm start` pass the process-wide configuration's signer,
 * ledger sender (DynamoDB nonces) and store (lib/deps/anchoring.ts getPqRegistrationDeps).
 *
 * @returns the registration and whether this call sent its transaction.
 * @throws LedgerUnavailableError when the transaction could not be sent (the claim is released);
 *   PqRegistrationInProgressError when another run holds the claim for longer than the wait.
 */
export async function ensurePqKeyRegistered(d: PqRegistrationDeps): Promise<{ registration: PqKeyRegistration; sentNow: boolean }> {
  const clock = d.clock ?? (() => new Date());
  const publicKey = await d.signer.publicKey();
  const fingerprint = pqKeyFingerprint(publicKey);

  const existing = await d.store.read(fingerprint);
  if (existing?.tx_hash && existing.state !== 'failed') return { registration: await settle(d, existing), sentNow: false };

  const claimId = randomUUID();
  const ttl = d.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS;
  const now = clock();
  const registration: PqKeyRegistration = {
    algorithm: 'ML-DSA-65',
    fingerprint,
    key_id: mlDsaKeyId(publicKey),
    state: 'claimed',
    chain_id: d.ledger.chainId,
    created_at: existing?.created_at ?? now.toISOString(),
  };
  // Free when never claimed, when its claimant died (claim expired before a hash was recorded), or
  // when its transaction failed; never while another run is sending.
  if (!(await d.store.claim(registration, claimId, now.getTime() + ttl, now.getTime()))) {
    return { registration: await waitForOther(d, fingerprint), sentNow: false };
  }

  let sent: { txHash: string; nonce: number } | undefined;
  let sentNow = false;
  try {
    if (existing?.state === 'claimed') sent = await findSentSlot(d.ledger, fingerprint);
    if (!sent) {
      sent = await d.ledger.submit(encodePqKeyData(fingerprint), { kind: 'pq-key', ref: fingerprint });
      sentNow = true;
    }
  } catch (error) {
    await d.store.releaseClaim(fingerprint, claimId).catch((e: unknown) =>
      log.error('pq-key claim not released; it expires by itself', { fingerprint, ...describeError(e) }),
    );
    throw error;
  }
  if (sentNow) await d.stats?.recordOnce(`pq-key#${fingerprint}`, { transactions: 1 });

  const from = await d.ledger.address();
  // Only our own claim: a run that outlived its claim must not overwrite its successor's record.
  const recorded = await d.store.recordSent(fingerprint, claimId, { txHash: sent.txHash, nonce: sent.nonce, from, sentAt: clock().toISOString() });
  if (!recorded) {
    log.error('pq-key claim lost before its transaction was recorded', { fingerprint, tx_hash: sent.txHash });
    const current = await d.store.read(fingerprint);
    if (!current) throw new Error(`the pq-key registration ${fingerprint.slice(0, 16)}… vanished after its claim was lost`);
    return { registration: current, sentNow };
  }
  return { registration: await settle(d, recorded), sentNow };
}

/** Awaits and records the receipt of a `sent` registration; others are returned as they are. */
async function settle(d: PqRegistrationDeps, record: PqKeyRegistration): Promise<PqKeyRegistration> {
  if (record.state !== 'sent' || !record.tx_hash) return record;
  const receipt = await d.ledger.waitForReceipt(record.tx_hash, d.receiptTimeoutMs).catch((error: unknown) => {
    log.warn('pq-key receipt not read; the registration stays sent', { tx_hash: record.tx_hash, ...describeError(error) });
    return null;
  });
  if (!receipt) return record;
  const confirmedAt = (d.clock ?? (() => new Date()))().toISOString();
  await d.store.recordReceipt(record.fingerprint, record.tx_hash, { status: receipt.status, blockNumber: receipt.blockNumber, confirmedAt });
  return { ...record, state: receipt.status, block_number: receipt.blockNumber, confirmed_at: confirmedAt };
}

/** Lost the claim to a concurrent run: wait for its transaction hash rather than send a second. */
async function waitForOther(d: PqRegistrationDeps, fingerprint: string): Promise<PqKeyRegistration> {
  const deadline = Date.now() + (d.waitForOtherMs ?? 30_000);
  for (;;) {
    const current = await d.store.read(fingerprint);
    if (current?.tx_hash && current.state !== 'failed') return settle(d, current);
    if (Date.now() >= deadline) throw new PqRegistrationInProgressError(fingerprint);
    await sleep(d.pollMs ?? 100);
  }
}

/** A live pq-key transaction for this fingerprint among the wallet's persisted ones, if any. */
async function findSentSlot(ledger: PqRegistrationLedger, fingerprint: string): Promise<{ txHash: string; nonce: number } | undefined> {
  if (!ledger.listSlots) return undefined;
  const slots = await ledger.listSlots(0);
  const slot = slots.find((s) => s.kind === 'pq-key' && s.ref === fingerprint && SLOT_LIVE.has(s.status));
  return slot ? { txHash: slot.tx_hash, nonce: slot.nonce } : undefined;
}

/** The registration transaction as read from the chain now. */
export interface PqRegistrationCheck {
  found: boolean;
  status: 'confirmed' | 'pending' | 'failed' | 'not_found';
  block_number: number | null;
  confirmations: number;
  /** The transaction's input data is `ML-DSA-65:` || this fingerprint. */
  data_matches: boolean;
  /** Sent by the recorded wallet. */
  from_matches: boolean;
}

/** Reads the registration transaction from the chain (JSON-RPC, no ethers) and checks its data. */
export async function checkPqRegistrationOnChain(
  rpc: Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>,
  registration: PqKeyRegistration & { tx_hash: string },
): Promise<PqRegistrationCheck> {
  const tx = await rpc.getTransaction(registration.tx_hash);
  if (!tx) return { found: false, status: 'not_found', block_number: null, confirmations: 0, data_matches: false, from_matches: false };
  let dataMatches = false;
  try {
    dataMatches = decodePqKeyData(tx.input).fingerprint === registration.fingerprint;
  } catch {
    dataMatches = false;
  }
  const fromMatches = tx.from === registration.from?.toLowerCase();
  if (tx.blockNumber === null) {
    return { found: true, status: 'pending', block_number: null, confirmations: 0, data_matches: dataMatches, from_matches: fromMatches };
  }
  const [receipt, latest] = await Promise.all([rpc.getTransactionReceipt(registration.tx_hash), rpc.blockNumber()]);
  return {
    found: true,
    status: receipt?.status === 'success' ? 'confirmed' : 'failed',
    block_number: tx.blockNumber,
    confirmations: Math.max(0, latest - tx.blockNumber + 1),
    data_matches: dataMatches,
    from_matches: fromMatches,
  };
}

/**
 * The service's current ML-DSA-65 public key (raw, 1952 bytes) without loading the private key:
 * the public key file (written next to the seed locally, shipped with the functions in AWS), or,
 * when there is none and the signer is in KMS, `fromSigner` (KMS GetPublicKey; lib/deps wires it).
 */
export async function loadPqPublicKey(signer: { publicKeyFile: string; scheme: 'local' | 'kms' }, fromSigner: () => Promise<Uint8Array>): Promise<Uint8Array> {
  try {
    const key = new Uint8Array(await readFile(signer.publicKeyFile));
    if (key.length !== ML_DSA_65_PUBLIC_KEY_BYTES) throw new Error(`the ML-DSA-65 public key file holds ${key.length} bytes, not ${ML_DSA_65_PUBLIC_KEY_BYTES}`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || signer.scheme !== 'kms') throw error;
    return fromSigner();
  }
}
