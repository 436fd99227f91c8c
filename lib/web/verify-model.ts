/**
 * What the public verify page shows: the one verdict (lib/evidence/verdict.ts, via verify.ts) in
 * words, one card per proof. The page never shows a stored flag as a result and decides nothing of
 * its own: every tone and every status line below is read off the verdict's proof states.
 */
import { describeSubject } from '../crypto/tsa/x509-verify.js';
import { type EvidenceVerdict, foldProofs, type LedgerSummary, type ProofResult } from '../evidence/verdict.js';
import type { EvidenceVerification } from '../evidence/verify.js';
import { explorerUrl } from '../ledger/anchor-data.js';

export type Tone = 'ok' | 'bad' | 'warn';

/** One proof card: its tone and status line from the verdict, and the verdict's reasons. */
export interface ProofCard {
  tone: Tone;
  status: string;
  /** The verdict's reasons for this card's proofs, in order. */
  reasons: string[];
}

export interface AnchoredModel {
  kind: 'anchored';
  imageHash: string;
  /** The verdict's status, as the page's data-status attribute says it. */
  status: EvidenceVerdict['status'];
  /** The proofs that fail, and the ones not established (the verdict's lists). */
  failed: string[];
  open: string[];
  verdict: { tone: Tone; title: string; summary: string };
  anchoredAt: string;
  serverHash: string;
  pq: ProofCard & { keyId: string; keyPublished: boolean };
  timestamp: ProofCard & { time: string | null; tsa: string | null; serial: string; policy: string };
  ledger: ProofCard & Omit<LedgerSummary, 'status'> & { chainId: number; explorerUrl: string; inputData: string; batch: { root: string; leafIndex: number; treeSize: number } | null };
  device: ProofCard & {
    publicKeyHex: string;
    deviceId: string | null;
    chainIndex: number;
    chainHash: string;
    previousHash: string | null;
  };
}

export type VerifyPageModel =
  | AnchoredModel
  | { kind: 'registered'; imageHash: string; registeredAt: string | null }
  | { kind: 'unknown'; imageHash: string };

/**
 * A card of several proofs, each given with the status line it shows when it fails: any fails →
 * bad; all hold (or are absent) → ok; else warn (pending, or not checked).
 */
function card(okStatus: string, results: [string, ProofResult][]): ProofCard {
  const { failed, open } = foldProofs(results.map(([line, r]) => [[line, r] as const, r.state] as const));
  const reasons = results.filter(([, r]) => r.state !== 'absent').map(([, r]) => r.reason);
  const failing = failed[0];
  const first = open[0];
  if (failing) return { tone: 'bad', status: failing[0], reasons };
  if (first) return { tone: 'warn', status: first[1].state === 'pending' ? 'Pending' : 'Not checked', reasons };
  return { tone: 'ok', status: okStatus, reasons };
}

/** The page model of one verification; `explorerTemplate` is LEDGER_EXPLORER_TX_URL. */
export function buildVerifyPageModel(v: EvidenceVerification, explorerTemplate: string): VerifyPageModel {
  const r = v.record;
  const verdict = v.verdict;
  if (!r || !verdict) {
    return v.found ? { kind: 'registered', imageHash: v.image_hash, registeredAt: v.registered_at } : { kind: 'unknown', imageHash: v.image_hash };
  }
  const p = verdict.proofs;
  const l = verdict.ledger;
  const title = verdict.headline;
  const tone: Tone = verdict.status === 'verified' ? 'ok' : verdict.status === 'failed' ? 'bad' : 'warn';
  const merkle = r.merkle ? { root: r.merkle.root, leafIndex: r.merkle.leaf_index, treeSize: r.merkle.tree_size } : null;
  const confirmations = `${l.confirmations} confirmation${l.confirmations === 1 ? '' : 's'}`;

  return {
    kind: 'anchored',
    imageHash: r.image_hash,
    status: verdict.status,
    failed: [...verdict.failed],
    open: [...verdict.open],
    // Under the headline, the sentence after it (capitalised).
    verdict: { tone, title, summary: verdict.detail.charAt(0).toUpperCase() + verdict.detail.slice(1) },
    anchoredAt: r.anchored_at,
    serverHash: r.server_hash,
    pq: {
      ...card('ML-DSA-65 valid', [
        ['Statement mismatch', p.statement],
        ['ML-DSA-65 invalid', p.pq_signature],
        ['Unknown key', p.pq_key],
      ]),
      keyId: r.pq_key_id,
      keyPublished: p.pq_key.state === 'holds',
    },
    timestamp: {
      // The post-quantum token (ML-DSA-65) is the same kind of proof: its reason is listed on the card, and it can fail it.
      ...card(p.timestamp_pq.state === 'holds' ? 'RFC 3161 valid (ECDSA and ML-DSA-65)' : 'RFC 3161 valid', [
        ['RFC 3161 invalid', p.timestamp],
        ['Post-quantum RFC 3161 invalid', p.timestamp_pq],
      ]),
      time: verdict.timestamp_time ?? r.tsa_gen_time,
      tsa: r.tsa_certificates[0] ? describeSubject(r.tsa_certificates[0]) : null,
      serial: r.tsa_serial,
      policy: r.tsa_policy,
    },
    ledger: {
      ...l, // first: the card's status line below replaces the summary's status word
      ...card(`Confirmed, ${confirmations}${l.final ? ', final' : ''}`, [
        [l.status === 'not_found' ? 'Not found on the chain' : l.status === 'failed' ? 'Transaction failed' : l.data_matches === false ? 'Data does not match' : 'Ledger check failed', p.ledger],
        ['Inclusion proof invalid', p.merkle],
      ]),
      chainId: r.ledger_chain_id,
      explorerUrl: explorerUrl(explorerTemplate, r.tx_hash),
      // What the transaction's input data carries, stated as it is (a batch carries the root, not the hashes).
      inputData: merkle
        ? `MERKLE-SHA256: ‖ the batch's Merkle root ${merkle.root}; this anchor is leaf ${merkle.leafIndex} of ${merkle.treeSize}, and its inclusion path leads from SHA-256(0x00 ‖ image_hash ‖ server_hash) to that root`
        : 'image_hash ‖ server_hash of this evidence',
      batch: merkle,
    },
    device: {
      ...card('Ed25519 valid', [
        ['Signature invalid', p.device_signature],
        ['Chain hash invalid', p.chain_link],
      ]),
      publicKeyHex: r.public_key_hex,
      deviceId: r.device_id ?? null,
      chainIndex: r.chain_index,
      chainHash: r.chain_hash,
      previousHash: r.previous_hash,
    },
  };
}
