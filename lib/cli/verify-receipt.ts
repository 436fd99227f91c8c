/**
 * The offline verifier: checks a receipt (GET /api/v2/evidence/receipt/{image_hash}) without the
 * service. Every proof is recomputed from the receipt's bytes; nothing the receipt *says* about
 * itself (flags, statuses) is believed.
 *
 * Each check verifies one link of the evidence, so that a tampered field fails the check that
 * owns it and only that one:
 *
 *   file ──SHA-256──▶ image_hash ──Ed25519──▶ device key         (device_signature)
 *                         │        └─SHA-256(prev||image)──▶ chain_hash  (chain_hash)
 *                         ├─RFC 3161 imprint──▶ TSA token ──▶ root      (timestamp_*)
 *   statement ──RFC 8785 + SHA-256──▶ server_hash                    (server_hash)
 *   SHA-256(JCS(statement)) ──ML-DSA-65──▶ service key                (pq_signature)
 *   image_hash || SHA-256(JCS(statement)) ──▶ ledger tx input data    (ledger_data)
 *
 * The ML-DSA signature and the ledger data are checked against the hash the statement really
 * has, not against the receipt's `server_hash` field: the field is checked on its own.
 *
 * Every verdict is lib/evidence/proof-check.ts's (the checker the API and the page use too); this
 * file reads the receipt's fields, does the I/O (the TSA path, the ledger node) and reports.
 */
import { isSha256Hex, sha256Hex } from '../crypto/hash.js';
import { canonicalize } from '../crypto/jcs.js';
import { mlDsaPublicKeyFingerprint, ML_DSA_65_PUBLIC_KEY_BYTES } from '../crypto/ml-dsa.js';
import { type CheckOutcome, type TimestampVerification, verifyTimestampResponse } from '../crypto/tsa/verify.js';
import { describeSubject } from '../crypto/tsa/x509-verify.js';
import {
  checkChainHash,
  checkDeviceSignature,
  checkLedgerTransaction,
  checkMerkleInclusion,
  checkPqKey,
  checkPqSignature,
  checkPreviousHash,
  checkServerHash,
  checkTimestamp,
  statementMismatches,
} from '../evidence/proof-check.js';
import type { RpcReader } from '../ledger/rpc-reader.js';

/** Result of one check: `pass` only when it ran and held. */
export type ReceiptCheckResult = 'pass' | 'fail' | 'skipped';

/** Stable ids of the checks, in the order they are reported. */
export const CHECK_IDS = [
  'file',
  'device_signature',
  'chain_hash',
  'server_hash',
  'pq_signature',
  'pq_key',
  'timestamp_status',
  'timestamp_imprint',
  'timestamp_signature',
  'timestamp_ess_cert_id',
  'timestamp_eku',
  'timestamp_tsa_name',
  'timestamp_policy',
  'timestamp_chain',
  'ledger_merkle',
  'ledger_tx',
  'ledger_data',
] as const;
export type CheckId = (typeof CHECK_IDS)[number];

/** One line of the report. */
export interface ReceiptCheck {
  id: CheckId;
  label: string;
  result: ReceiptCheckResult;
  /** One line: why it passed, failed or was skipped. */
  reason: string;
}

/** What is being verified: a file (hashed by the caller) or a bare hash. */
export type VerifySubject = { kind: 'file'; name: string; sha256: string } | { kind: 'hash'; hash: string };

/** The ledger reads the verifier needs (an RpcReader against any node of the receipt's chain). */
export type LedgerReader = Pick<RpcReader, 'chainId' | 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>;

export interface VerifyReceiptOptions {
  /** The parsed receipt JSON. */
  receipt: unknown;
  subject: VerifySubject;
  /** A pinned TSA root (PEM). Without it the last certificate of the receipt is used (not pinned). */
  rootPem?: string;
  /** Where the pinned root came from, for the report. */
  rootSource?: string;
  /** With a reader, the ledger transaction is read from the chain; without, the ledger checks are skipped. */
  ledger?: LedgerReader;
  /** Confirmations the transaction needs (default 1: mined). */
  minConfirmations?: number;
  /** A pinned SHA-256 fingerprint of the service's ML-DSA-65 public key. */
  pqKeyFingerprint?: string;
  /** More pinned fingerprints (the trust file: every ML-DSA-65 key of the trusted services, retired ones too). */
  pqKeyFingerprints?: string[];
  /** More pinned TSA roots (PEM), e.g. from the trust file; any of them may anchor the token. */
  rootsPem?: string[];
  /**
   * Pinned ledger wallet addresses: the transaction must come from one of them. Without a pin the
   * sender is compared with the receipt's own `ledger.from` (which proves nothing by itself), and a
   * receipt without `ledger.from` fails the ledger check.
   */
  wallets?: string[];
  /** Where the pinned wallet(s) came from, for the report. */
  walletSource?: string;
  /** Where the pinned ML-DSA-65 key(s) came from, for the report. */
  pqKeySource?: string;
}

/** The whole report. */
export interface ReceiptVerification {
  /** True when no check failed (skipped checks do not fail the receipt). */
  ok: boolean;
  checks: ReceiptCheck[];
  /** Where the trust anchor of the timestamp came from. */
  root: { source: 'pinned' | 'receipt' | 'none'; detail: string };
  /** Where the expected sender of the ledger transaction came from. */
  wallet: { source: 'pinned' | 'receipt' | 'none'; detail: string };
  /** Whether the ML-DSA-65 key was pinned. */
  pq_key: { source: 'pinned' | 'receipt'; detail: string };
  image_hash: string | null;
  anchored_at: string | null;
  timestamp: { gen_time: string | null; tsa: string | null };
  ledger: { chain_id: number | null; tx_hash: string | null; confirmations: number | null; block_number: number | null };
}

const LABELS: Record<CheckId, string> = {
  file: 'file SHA-256',
  device_signature: 'device signature (Ed25519)',
  chain_hash: 'device chain hash',
  server_hash: 'server_hash (RFC 8785)',
  pq_signature: 'ML-DSA-65 signature',
  pq_key: 'ML-DSA-65 key pinned',
  timestamp_status: 'timestamp status',
  timestamp_imprint: 'timestamp imprint',
  timestamp_signature: 'timestamp signature',
  timestamp_ess_cert_id: 'timestamp ESSCertIDv2',
  timestamp_eku: 'timestamp EKU',
  timestamp_tsa_name: 'timestamp TSA name',
  timestamp_policy: 'timestamp policy',
  timestamp_chain: 'timestamp chain to root',
  ledger_merkle: 'Merkle inclusion (RFC 6962 batch)',
  ledger_tx: 'ledger transaction',
  ledger_data: 'ledger input data',
};

/** A field of the receipt that is missing or has the wrong type. */
class ReceiptFieldError extends Error {}

/** Typed access to the receipt: every getter throws ReceiptFieldError with the field's path. */
class Fields {
  constructor(private readonly root: unknown) {}

  private at(path: string): unknown {
    let value: unknown = this.root;
    for (const part of path.split('.')) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
      value = (value as Record<string, unknown>)[part];
    }
    return value;
  }

  has(path: string): boolean {
    return this.at(path) !== undefined;
  }

  raw(path: string): unknown {
    return this.at(path);
  }

  string(path: string): string {
    const v = this.at(path);
    if (typeof v !== 'string') throw new ReceiptFieldError(`the receipt has no ${path}`);
    return v;
  }

  hash(path: string): string {
    const v = this.string(path);
    if (!isSha256Hex(v)) throw new ReceiptFieldError(`${path} in the receipt is not 64 hex characters`);
    return v.toLowerCase();
  }

  nullableHash(path: string): string | null {
    const v = this.at(path);
    if (v === null || v === undefined) return null;
    return this.hash(path);
  }

  integer(path: string): number {
    const v = this.at(path);
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new ReceiptFieldError(`${path} in the receipt is not a non-negative integer`);
    return v;
  }

  base64(path: string): Uint8Array {
    const v = this.string(path);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) throw new ReceiptFieldError(`${path} in the receipt is not base64`);
    return new Uint8Array(Buffer.from(v, 'base64'));
  }

  object(path: string): Record<string, unknown> {
    const v = this.at(path);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ReceiptFieldError(`the receipt has no ${path} object`);
    return v as Record<string, unknown>;
  }

  strings(path: string): string[] {
    const v = this.at(path);
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ReceiptFieldError(`${path} in the receipt is not a list of strings`);
    return v as string[];
  }
}

const pass = (reason: string) => ({ result: 'pass' as const, reason });
const fail = (reason: string) => ({ result: 'fail' as const, reason });
const skip = (reason: string) => ({ result: 'skipped' as const, reason });
type Outcome = ReturnType<typeof pass> | ReturnType<typeof fail> | ReturnType<typeof skip>;

/** Runs a check; a missing or malformed receipt field fails it with that field's name. */
function run(check: () => Outcome): Outcome {
  try {
    return check();
  } catch (error) {
    if (error instanceof ReceiptFieldError) return fail(error.message);
    return fail(`cannot be checked: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const short = (hex: string) => `${hex.slice(0, 12)}…`;

/**
 * Verifies a receipt. Never throws for a bad receipt: each problem is a failed check with its
 * reason. `ok` is true only when no check that ran failed.
 */
export async function verifyReceipt(options: VerifyReceiptOptions): Promise<ReceiptVerification> {
  const f = new Fields(options.receipt);
  const results = new Map<CheckId, Outcome>();
  const set = (id: CheckId, outcome: Outcome) => results.set(id, outcome);

  const imageHash = safe(() => f.hash('image_hash'));
  const anchoredAt = safe(() => f.string('anchored_at'));
  const pinnedPq = [...(options.pqKeyFingerprint ? [options.pqKeyFingerprint] : []), ...(options.pqKeyFingerprints ?? [])].map((x) => x.toLowerCase());

  // file ─▶ image_hash
  set(
    'file',
    run(() => {
      const expected = f.hash('image_hash');
      const subject = options.subject;
      if (subject.kind === 'file') {
        return subject.sha256 === expected
          ? pass(`SHA-256 of ${subject.name} is the receipt's image_hash ${short(expected)}`)
          : fail(`SHA-256 of ${subject.name} is ${subject.sha256}, the receipt is for ${expected}: not the same file`);
      }
      const given = subject.hash.toLowerCase();
      return given === expected
        ? pass(`the given hash is the receipt's image_hash (no file was hashed)`)
        : fail(`the given hash ${given} is not the receipt's image_hash ${expected}`);
    }),
  );

  // The statement and its hash: what the ML-DSA signature and the ledger data must cover.
  const statement = safe(() => f.object('statement'));
  const canonical = statement ? safe(() => canonicalize(statement)) : null;
  const statementHash = canonical !== null ? sha256Hex(canonical) : null;

  set(
    'device_signature',
    run(() => {
      const key = f.string('device.public_key_hex');
      const signature = f.string('device.signature_hex');
      const image = f.hash('image_hash');
      const verdict = checkDeviceSignature({ image_hash: image, public_key_hex: key, signature_hex: signature });
      if (!verdict.ok) return fail(verdict.reason);
      // The statement is what the service signed: the device fields must be the ones it names.
      if (statement && statementMismatches(statement, { public_key_hex: key, signature_hex: signature }).length > 0) {
        return fail('device key or signature differs from the one in the signed statement');
      }
      return pass(verdict.reason);
    }),
  );

  set(
    'chain_hash',
    run(() => {
      const image = f.hash('image_hash');
      const index = f.integer('device.chain_index');
      const chainHash = f.hash('device.chain_hash');
      const previous = f.nullableHash('device.previous_hash');
      const link = { image_hash: image, chain_index: index, chain_hash: chainHash, previous_hash: previous };
      // The previous link itself is not in the receipt: its linkage is checked as far as one record allows.
      const linkage = checkPreviousHash(link);
      if (!linkage.ok) return fail(linkage.reason);
      const verdict = checkChainHash(link);
      if (!verdict.ok) return fail(verdict.reason);
      if (statement && statementMismatches(statement, { chain_hash: chainHash, chain_index: index, previous_hash: previous }).length > 0) {
        return fail('chain fields differ from the ones in the signed statement');
      }
      const prevNote = index === 0 ? 'first link' : 'the previous link itself needs the device chain (GET /api/v1/chain/all/{public_key_hex})';
      return pass(`${verdict.reason} (${prevNote})`);
    }),
  );

  set(
    'server_hash',
    run(() => {
      const stated = f.hash('server_hash');
      const st = f.object('statement');
      if (canonical === null || statementHash === null) return fail('the statement cannot be canonicalised (RFC 8785)');
      if (st.statement_type !== 'evidence-anchor-v1') return fail(`unknown statement_type ${JSON.stringify(st.statement_type)}`);
      const verdict = checkServerHash(canonical, stated);
      if (!verdict.ok) return fail(verdict.reason);
      if (f.has('statement_canonical') && f.string('statement_canonical') !== canonical) {
        return fail('statement_canonical is not the RFC 8785 form of statement');
      }
      const differ = statementMismatches(st, { image_hash: f.hash('image_hash'), ...(f.has('anchored_at') ? { anchored_at: f.string('anchored_at') } : {}) });
      if (differ.length > 0) return fail(`the statement names another ${differ.join(', ')}`);
      return pass(verdict.reason);
    }),
  );

  set(
    'pq_signature',
    run(() => {
      const algorithm = f.string('pq_signature.algorithm');
      if (algorithm !== 'ML-DSA-65') return fail(`algorithm ${algorithm}, expected ML-DSA-65`);
      const publicKey = f.base64('pq_signature.public_key');
      const signature = f.base64('pq_signature.signature');
      if (publicKey.length !== ML_DSA_65_PUBLIC_KEY_BYTES) return fail(`the public key is ${publicKey.length} bytes, ML-DSA-65 keys are ${ML_DSA_65_PUBLIC_KEY_BYTES}`);
      if (statementHash === null) return fail('no statement to check the signature against');
      // Over the hash the statement really has (not the receipt's server_hash field, checked on its own).
      const verdict = checkPqSignature({ serverHash: statementHash, publicKey, signature });
      return verdict.ok
        ? pass(`FIPS 204 signature over SHA-256(statement) verifies with key ${mlDsaPublicKeyFingerprint(publicKey).slice(0, 16)}…`)
        : fail('the ML-DSA-65 signature does not verify over SHA-256(statement) with the receipt\'s public key');
    }),
  );

  set(
    'pq_key',
    run(() => {
      const publicKey = f.base64('pq_signature.public_key');
      if (publicKey.length !== ML_DSA_65_PUBLIC_KEY_BYTES) return fail('the receipt carries no ML-DSA-65 public key');
      const fingerprint = mlDsaPublicKeyFingerprint(publicKey);
      if (pinnedPq.length === 0) return skip(`key from receipt (not pinned), fingerprint ${fingerprint}; pin it with --pq-key or evidence trust add <url>`);
      return checkPqKey(publicKey, pinnedPq).ok
        ? pass(`the key's SHA-256 fingerprint is the pinned ${short(fingerprint)}${options.pqKeySource ? ` (${options.pqKeySource})` : ''}`)
        : fail(`the key's fingerprint ${fingerprint} is not ${pinnedPq.length === 1 ? `the pinned ${pinnedPq[0]}` : `one of the ${pinnedPq.length} pinned keys`}`);
    }),
  );

  // RFC 3161 token: against the pinned root, or the receipt's own root (internal consistency only).
  const certificates = safe(() => f.strings('timestamp.tsa_certificates')) ?? [];
  let root: ReceiptVerification['root'];
  const pinnedRoots = [...(options.rootPem !== undefined ? [options.rootPem] : []), ...(options.rootsPem ?? [])];
  let rootPem: string | undefined;
  if (pinnedRoots.length > 0) {
    root = { source: 'pinned', detail: `pinned${options.rootSource ? ` (${options.rootSource})` : ''}` };
  } else {
    rootPem = certificates[certificates.length - 1];
    root = rootPem
      ? { source: 'receipt', detail: 'from receipt (not pinned): proves internal consistency only; pin the TSA root with --root' }
      : { source: 'none', detail: 'none: the receipt carries no TSA certificate; pass --root' };
  }
  let tsaResult: TimestampVerification | null = null;
  let tsaFailure: string | null = null;
  try {
    const token = f.base64('timestamp.token');
    const image = f.hash('image_hash');
    const policy = safe(() => f.string('timestamp.policy'));
    tsaResult = await verifyTimestampResponse(token, {
      imprint: Buffer.from(image, 'hex'),
      roots: pinnedRoots.length > 0 ? pinnedRoots : rootPem !== undefined ? [rootPem] : [],
      untrusted: certificates,
      hashAlgorithm: 'SHA-256',
      ...(policy ? { policy } : {}),
    });
  } catch (error) {
    tsaFailure = error instanceof ReceiptFieldError ? error.message : `cannot be checked: ${error instanceof Error ? error.message : String(error)}`;
  }
  const timestamp = checkTimestamp(tsaResult, tsaFailure ?? undefined);
  const fromTsa = (outcome: CheckOutcome): Outcome => ({ result: outcome.result, reason: outcome.reason }) as Outcome;
  set('timestamp_status', fromTsa(timestamp.checks.status));
  set('timestamp_imprint', fromTsa(timestamp.checks.imprint));
  set('timestamp_signature', fromTsa(timestamp.checks.signature));
  set('timestamp_ess_cert_id', fromTsa(timestamp.checks.essCertIdV2));
  set('timestamp_eku', fromTsa(timestamp.checks.eku));
  set('timestamp_tsa_name', fromTsa(timestamp.checks.tsaName));
  set('timestamp_policy', fromTsa(timestamp.checks.policy));
  set('timestamp_chain', root.source === 'none' ? fail(root.detail) : fromTsa(timestamp.checks.chain));
  if (root.source === 'receipt' && results.get('timestamp_chain')?.result === 'pass') {
    set('timestamp_chain', pass(`${results.get('timestamp_chain')?.reason ?? ''} [root: from receipt (not pinned)]`));
  }

  // Batch mode: the leaf leads by its inclusion path to the batch root (offline; the root is then
  // held against the transaction's input by ledger_data).
  set(
    'ledger_merkle',
    !f.has('ledger.merkle')
      ? skip('a direct anchor: its transaction carries image_hash || server_hash itself (no batch)')
      : run(() => {
          const image = f.hash('image_hash');
          if (statementHash === null) return fail('no statement to build the leaf from');
          const verdict = checkMerkleInclusion(image, statementHash, f.object('ledger.merkle'));
          return verdict.ok ? pass(verdict.reason) : fail(verdict.reason);
        }),
  );

  // Ledger: only with a node to ask.
  const ledgerInfo: ReceiptVerification['ledger'] = {
    chain_id: safe(() => f.integer('ledger.chain_id')),
    tx_hash: safe(() => f.string('ledger.tx_hash')),
    confirmations: null,
    block_number: null,
  };
  if (!options.ledger) {
    set('ledger_tx', skip('no --rpc given: the ledger transaction was not read'));
    set('ledger_data', skip('no --rpc given: the ledger transaction was not read'));
  } else {
    const [txOutcome, dataOutcome] = await checkLedger(f, options.ledger, statementHash, options.minConfirmations ?? 1, ledgerInfo, options.wallets ?? []);
    set('ledger_tx', txOutcome);
    set('ledger_data', dataOutcome);
  }

  const checks = CHECK_IDS.map((id) => {
    const outcome = results.get(id) ?? skip('not checked');
    return { id, label: LABELS[id], result: outcome.result, reason: outcome.reason };
  });
  const receiptFrom = safe(() => f.string('ledger.from'));
  const wallet: ReceiptVerification['wallet'] =
    (options.wallets ?? []).length > 0
      ? { source: 'pinned', detail: `pinned ${options.wallets?.join(', ')}${options.walletSource ? ` (${options.walletSource})` : ''}` }
      : receiptFrom
        ? { source: 'receipt', detail: `from receipt (not pinned): ${receiptFrom}; pin the service wallet with --wallet or evidence trust add <url>` }
        : { source: 'none', detail: 'none: the receipt names no sender and no wallet is pinned (--wallet)' };
  const pqKey: ReceiptVerification['pq_key'] =
    pinnedPq.length > 0
      ? { source: 'pinned', detail: `pinned${options.pqKeySource ? ` (${options.pqKeySource})` : ''}` }
      : { source: 'receipt', detail: 'from receipt (not pinned): pin it with --pq-key or evidence trust add <url>' };
  return {
    ok: checks.every((c) => c.result !== 'fail'),
    checks,
    root,
    wallet,
    pq_key: pqKey,
    image_hash: imageHash,
    anchored_at: anchoredAt,
    timestamp: {
      gen_time: tsaResult?.genTime ? tsaResult.genTime.toISOString() : null,
      tsa: tsaSignerName(certificates) ?? tsaResult?.tsaName ?? null,
    },
    ledger: ledgerInfo,
  };
}

async function checkLedger(
  f: Fields,
  rpc: LedgerReader,
  statementHash: string | null,
  minConfirmations: number,
  info: ReceiptVerification['ledger'],
  wallets: string[],
): Promise<[Outcome, Outcome]> {
  let txHash: string;
  let chainId: number;
  try {
    txHash = f.string('ledger.tx_hash').toLowerCase();
    chainId = f.integer('ledger.chain_id');
    if (!/^0x[0-9a-f]{64}$/.test(txHash)) throw new ReceiptFieldError('ledger.tx_hash in the receipt is not 0x followed by 64 hex characters');
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return [fail(reason), skip('no transaction to read')];
  }
  try {
    const nodeChain = await rpc.chainId();
    if (nodeChain !== chainId) return [fail(`the node is on chain ${nodeChain}, the receipt's transaction is on chain ${chainId}`), skip('wrong chain: not read')];
    const tx = await rpc.getTransaction(txHash);
    if (!tx) return [fail(`transaction ${txHash} is not on chain ${chainId}`), skip('transaction not found')];
    const [receipt, latest] = tx.blockNumber === null ? [null, undefined] : await Promise.all([rpc.getTransactionReceipt(txHash), rpc.blockNumber()]);
    const image = safe(() => f.hash('image_hash'));
    const from = safe(() => f.string('ledger.from'));
    // The sender: one of the pinned wallets; without a pin, the receipt's own ledger.from (a claim
    // of the receipt about itself). A receipt that names no sender, with nothing pinned, cannot
    // show that the service sent the transaction: that fails, it does not pass silently.
    const pinned = wallets.find((w) => w.toLowerCase() === tx.from.toLowerCase()) ?? wallets[0];
    const expectedFrom = pinned ?? from ?? undefined;
    const verdict = checkLedgerTransaction(
      { tx, receipt, ...(latest !== undefined ? { latestBlock: latest } : {}) },
      { image_hash: image ?? '', server_hash: statementHash, from: expectedFrom, minConfirmations, merkle: f.has('ledger.merkle') ? f.raw('ledger.merkle') : undefined },
    );
    const data = image === null ? fail('the receipt has no image_hash') : verdict.data.ok ? pass(verdict.data.reason) : fail(verdict.data.reason);
    if (tx.blockNumber !== null) {
      info.confirmations = verdict.confirmations;
      info.block_number = tx.blockNumber;
    }
    if (!verdict.transaction.ok) return [fail(`transaction ${short(txHash)} on chain ${chainId}: ${verdict.transaction.reason}`), data];
    if (expectedFrom === undefined) return [fail(`the receipt names no sender (ledger.from) and no wallet is pinned: transaction ${short(txHash)} was sent by ${tx.from}, not shown to be the service's`), data];
    if (pinned !== undefined && from !== null && from.toLowerCase() !== tx.from.toLowerCase()) {
      return [fail(`the receipt says the transaction came from ${from}, the chain says ${tx.from}`), data];
    }
    const n = verdict.confirmations;
    const who = pinned !== undefined ? `from the pinned wallet ${tx.from}` : `from ${tx.from} (the receipt's ledger.from; wallet not pinned)`;
    return [pass(`mined in block ${tx.blockNumber} of chain ${chainId}, ${n} confirmation${n === 1 ? '' : 's'}, ${who}`), data];
  } catch (error) {
    const reason = `the node could not be read: ${error instanceof Error ? error.message : String(error)}`;
    return [fail(reason), skip('the node could not be read')];
  }
}

/** The TSA signer's subject (the receipt's first certificate), for display. */
function tsaSignerName(certificates: string[]): string | null {
  const leaf = certificates[0];
  return leaf ? describeSubject(leaf) : null;
}

function safe<T>(get: () => T): T | null {
  try {
    return get();
  } catch {
    return null;
  }
}

/** The report as text lines: one per check, then the root note and the verdict. */
export function formatReport(report: ReceiptVerification): string[] {
  const width = Math.max(...report.checks.map((c) => c.label.length));
  const lines = report.checks.map((c) => `  ${c.result.padEnd(7)}  ${c.label.padEnd(width)}  ${c.reason}`);
  lines.push('');
  lines.push(`root: ${report.root.detail}`);
  lines.push(`ML-DSA-65 key: ${report.pq_key.detail}`);
  if (report.checks.some((c) => c.id === 'ledger_tx' && c.result !== 'skipped')) lines.push(`wallet: ${report.wallet.detail}`);
  if (report.timestamp.gen_time) lines.push(`time-stamped: ${report.timestamp.gen_time}${report.timestamp.tsa ? ` by ${report.timestamp.tsa}` : ''}`);
  if (report.ledger.tx_hash) {
    const n = report.ledger.confirmations;
    const conf = n === null ? 'not read (use --rpc URL)' : `${n} confirmation${n === 1 ? '' : 's'}`;
    lines.push(`ledger: ${report.ledger.tx_hash} on chain ${report.ledger.chain_id ?? '?'}, ${conf}`);
  }
  const passed = report.checks.filter((c) => c.result === 'pass').length;
  const failed = report.checks.filter((c) => c.result === 'fail');
  const skipped = report.checks.filter((c) => c.result === 'skipped').length;
  if (failed.length === 0) {
    const notPinned = [
      ...(report.root.source === 'receipt' ? ['the TSA root (--root)'] : []),
      ...(report.pq_key.source === 'receipt' ? ['the ML-DSA-65 key (--pq-key)'] : []),
      ...(report.wallet.source !== 'pinned' && report.checks.some((c) => c.id === 'ledger_tx' && c.result !== 'skipped') ? ['the ledger wallet (--wallet)'] : []),
    ];
    const unpinned = notPinned.length > 0 ? ` WARNING: not pinned: ${notPinned.join(', ')}; evidence trust add <url> pins them all.` : '';
    lines.push(`VERIFIED: ${passed} checks passed, ${skipped} skipped, none failed.${unpinned}`);
  } else {
    lines.push(`NOT VERIFIED: ${failed.length} check${failed.length === 1 ? '' : 's'} failed (${failed.map((c) => c.id).join(', ')}); ${passed} passed, ${skipped} skipped.`);
  }
  return lines;
}
