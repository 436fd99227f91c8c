/**
 * A receipt (GET /api/v2/evidence/receipt/{image_hash}, or the one a PDF certificate carries)
 * read into the proofs the one verdict judges (lib/evidence/verdict.ts ProofBundle) and what the
 * verifier needs for its I/O (the RFC 3161 token and certificates, the chain and transaction).
 *
 * Nothing the receipt says about itself (statuses, flags) is read. A receipt that lacks a field or
 * carries one of the wrong type is not a receipt: it gets no verdict, only the list of what is
 * wrong with it, each naming the field.
 */
import { canonicalize } from '../crypto/jcs.js';
import { isSha256Hex } from '../crypto/hash.js';
import type { FinalLedgerReceipt } from '../evidence/records.js';
import type { ProofBundle } from '../evidence/verdict.js';

/** What the verifier reads from a well-formed receipt. */
export interface ParsedReceipt {
  bundle: ProofBundle;
  token: Uint8Array;
  /** The TSA certificates the receipt carries, leaf first, root last. */
  certificates: string[];
  policy: string | null;
  chainId: number;
  /** The sender the receipt states (ledger.from); null: it names none. */
  statedFrom: string | null;
  /** What the service recorded when the transaction became final (ledger.final), if it had. */
  final: FinalLedgerReceipt | undefined;
  /** The post-quantum token (timestamp_pq, ML-DSA-65), when the receipt has one. */
  pq?: { token: Uint8Array; certificates: string[]; policy: string | null };
}

export type ReceiptReading = { ok: true; receipt: ParsedReceipt } | { ok: false; problems: string[] };

/** Typed access to the receipt's fields; each getter records what is wrong with a field and returns a placeholder. */
class Fields {
  readonly problems: string[] = [];

  constructor(private readonly root: unknown) {}

  private at(path: string): unknown {
    let value: unknown = this.root;
    for (const part of path.split('.')) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
      value = (value as Record<string, unknown>)[part];
    }
    return value;
  }

  private problem(text: string): void {
    this.problems.push(text);
  }

  has(path: string): boolean {
    return this.at(path) !== undefined && this.at(path) !== null;
  }

  string(path: string): string {
    const v = this.at(path);
    if (typeof v === 'string') return v;
    this.problem(`the receipt has no ${path}`);
    return '';
  }

  hash(path: string): string {
    const v = this.string(path);
    if (v !== '' && !isSha256Hex(v)) this.problem(`${path} in the receipt is not 64 hex characters`);
    return v.toLowerCase();
  }

  nullableHash(path: string): string | null {
    const v = this.at(path);
    return v === null || v === undefined ? null : this.hash(path);
  }

  integer(path: string): number {
    const v = this.at(path);
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
    this.problem(`${path} in the receipt is not a non-negative integer`);
    return 0;
  }

  base64(path: string): Uint8Array {
    const v = this.string(path);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
      if (v !== '') this.problem(`${path} in the receipt is not base64`);
      return new Uint8Array();
    }
    return new Uint8Array(Buffer.from(v, 'base64'));
  }

  object(path: string): Record<string, unknown> {
    const v = this.at(path);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
    this.problem(`the receipt has no ${path} object`);
    return {};
  }

  strings(path: string): string[] {
    const v = this.at(path);
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
    this.problem(`${path} in the receipt is not a list of strings`);
    return [];
  }

  raw(path: string): unknown {
    return this.at(path);
  }
}

/** The receipt's image_hash when it has a well-formed one (for the file check and the report). */
export function receiptImageHash(receipt: unknown): string | null {
  const f = new Fields(receipt);
  const h = f.hash('image_hash');
  return f.problems.length === 0 ? h : null;
}

/** Reads a receipt. Never throws: a malformed receipt comes back as its problems. */
export function readReceipt(receipt: unknown): ReceiptReading {
  const f = new Fields(receipt);
  const statementObject = f.object('statement');
  let statement = '';
  try {
    statement = canonicalize(statementObject);
  } catch (error) {
    f.problems.push(`the statement cannot be canonicalised (RFC 8785): ${error instanceof Error ? error.message : String(error)}`);
  }
  // statement_canonical is a convenience copy for implementations without RFC 8785; it must be the same bytes.
  if (f.has('statement_canonical') && f.string('statement_canonical') !== statement) f.problems.push('statement_canonical is not the RFC 8785 form of statement');
  const algorithm = f.string('pq_signature.algorithm');
  if (algorithm !== '' && algorithm !== 'ML-DSA-65') f.problems.push(`pq_signature.algorithm is ${algorithm}, not ML-DSA-65`);
  const txHash = f.string('ledger.tx_hash').toLowerCase();
  if (txHash !== '' && !/^0x[0-9a-f]{64}$/.test(txHash)) f.problems.push('ledger.tx_hash in the receipt is not 0x followed by 64 hex characters');
  const bundle: ProofBundle = {
    image_hash: f.hash('image_hash'),
    server_hash: f.hash('server_hash'),
    statement,
    anchored_at: f.string('anchored_at'),
    pq: { public_key: f.base64('pq_signature.public_key'), signature: f.base64('pq_signature.signature') },
    device: {
      public_key_hex: f.string('device.public_key_hex'),
      signature_hex: f.string('device.signature_hex'),
      chain_index: f.integer('device.chain_index'),
      chain_hash: f.hash('device.chain_hash'),
      previous_hash: f.nullableHash('device.previous_hash'),
    },
    ...(f.has('ledger.merkle') ? { merkle: f.raw('ledger.merkle') } : {}),
    tx_hash: txHash,
  };
  const parsed: ParsedReceipt = {
    bundle,
    token: f.base64('timestamp.token'),
    certificates: f.strings('timestamp.tsa_certificates'),
    policy: f.has('timestamp.policy') ? f.string('timestamp.policy') : null,
    chainId: f.integer('ledger.chain_id'),
    statedFrom: f.has('ledger.from') ? f.string('ledger.from') : null,
    final: f.has('ledger.final') ? readFinal(f) : undefined,
    ...(f.has('timestamp_pq')
      ? {
          pq: {
            token: f.base64('timestamp_pq.token'),
            certificates: f.strings('timestamp_pq.tsa_certificates'),
            policy: f.has('timestamp_pq.policy') ? f.string('timestamp_pq.policy') : null,
          },
        }
      : {}),
  };
  return f.problems.length > 0 ? { ok: false, problems: f.problems } : { ok: true, receipt: parsed };
}

/** ledger.final: what the service recorded when the transaction reached finality. */
function readFinal(f: Fields): FinalLedgerReceipt {
  return {
    block_number: f.integer('ledger.final.block_number'),
    block_hash: f.string('ledger.final.block_hash'),
    block_time: f.string('ledger.final.block_time'),
    confirmations: f.integer('ledger.final.confirmations'),
    from: f.string('ledger.final.from'),
    finality: f.string('ledger.final.finality') as FinalLedgerReceipt['finality'],
    recorded_at: f.string('ledger.final.since'),
  };
}
