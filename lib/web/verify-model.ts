/**
 * What the public verify page shows, from a fresh verification (lib/evidence/verify.ts, whose
 * every verdict, the device signature and chain hash included, is lib/evidence/proof-check.ts's).
 * The page never shows a stored flag as a result and computes no verdict of its own.
 */
import { describeSubject } from '../cli/verify-receipt.js';
import type { EvidenceVerification, LedgerCheck } from '../evidence/verify.js';
import { explorerUrl } from '../ledger/anchor-data.js';

export type Tone = 'ok' | 'bad' | 'warn';

export interface AnchoredModel {
  kind: 'anchored';
  imageHash: string;
  verdict: { tone: Tone; title: string; summary: string };
  anchoredAt: string;
  serverHash: string;
  statementValid: boolean;
  pq: { valid: boolean; keyTrusted: boolean; keyId: string };
  timestamp: { valid: boolean; time: string | null; tsa: string | null; serial: string; policy: string };
  ledger: LedgerCheck & { chainId: number; txHash: string; explorerUrl: string };
  device: {
    publicKeyHex: string;
    deviceId: string | null;
    chainIndex: number;
    chainHash: string;
    previousHash: string | null;
    signatureValid: boolean;
    chainHashValid: boolean;
  };
}

export type VerifyPageModel =
  | AnchoredModel
  | { kind: 'registered'; imageHash: string; registeredAt: string | null }
  | { kind: 'unknown'; imageHash: string };

/** The page model of one verification; `explorerTemplate` is LEDGER_EXPLORER_TX_URL. */
export function buildVerifyPageModel(v: EvidenceVerification, explorerTemplate: string): VerifyPageModel {
  const r = v.record;
  if (!v.anchored || !r) {
    return v.found ? { kind: 'registered', imageHash: v.image_hash, registeredAt: v.registered_at } : { kind: 'unknown', imageHash: v.image_hash };
  }
  const signatureValid = v.checks.device_signature;
  const chainHashValid = v.checks.chain_hash;
  let tsa: string | null = null;
  try {
    tsa = r.tsa_certificates[0] ? describeSubject(r.tsa_certificates[0]) : null;
  } catch {
    tsa = null;
  }

  const pqOk = v.checks.pq_signature && v.checks.pq_key_trusted;
  const all = v.verified;
  const failed = [
    !v.checks.statement && 'the statement does not hash to server_hash',
    !pqOk && 'the ML-DSA-65 signature',
    !v.checks.timestamp && 'the RFC 3161 timestamp',
    v.checks.ledger.status !== 'pending' && !v.checks.ledger.valid && 'the ledger transaction',
    !signatureValid && "the device's signature",
    !chainHashValid && 'the device chain hash',
  ].filter((x): x is string => typeof x === 'string');

  let verdict: AnchoredModel['verdict'];
  if (all) {
    verdict = {
      tone: 'ok',
      title: 'Verified',
      summary:
        'This SHA-256 hash is anchored. Its post-quantum signature, its RFC 3161 timestamp, its ledger transaction and its device signature ' +
        'were all checked just now and hold.',
    };
  } else if (failed.length === 0 && v.checks.ledger.status === 'pending') {
    verdict = {
      tone: 'warn',
      title: 'Anchored, ledger confirmation pending',
      summary: 'The signature and the timestamp hold; the ledger transaction is sent but not yet in a block. Reload in a few seconds.',
    };
  } else {
    verdict = {
      tone: 'bad',
      title: 'Not verified',
      summary: `This hash has an evidence record, but ${failed.join(', ')} did not check out. Do not rely on it.`,
    };
  }

  return {
    kind: 'anchored',
    imageHash: r.image_hash,
    verdict,
    anchoredAt: r.anchored_at,
    serverHash: r.server_hash,
    statementValid: v.checks.statement,
    pq: { valid: v.checks.pq_signature, keyTrusted: v.checks.pq_key_trusted, keyId: r.pq_key_id },
    timestamp: { valid: v.checks.timestamp, time: v.timestamp_time ?? r.tsa_gen_time, tsa, serial: r.tsa_serial, policy: r.tsa_policy },
    ledger: { ...v.checks.ledger, chainId: r.ledger_chain_id, txHash: r.tx_hash, explorerUrl: explorerUrl(explorerTemplate, r.tx_hash) },
    device: {
      publicKeyHex: r.public_key_hex,
      deviceId: r.device_id ?? null,
      chainIndex: r.chain_index,
      chainHash: r.chain_hash,
      previousHash: r.previous_hash,
      signatureValid,
      chainHashValid,
    },
  };
}
