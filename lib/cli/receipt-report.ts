/**
 * The offline verifier's report as text: one line per proof of the one verdict, in the words
 * every reader uses (holds, fails, pending, unchecked, absent), the RFC 3161 token's own checks
 * under the timestamp, the trust notes, then the overall status.
 */
import { TIMESTAMP_CHECKS } from '../evidence/proof-check.js';
import { PROOF_NAMES, PROOF_TITLES } from '../evidence/verdict.js';
import type { ReceiptVerification } from './verify-receipt.js';

const TIMESTAMP_LABELS: Record<(typeof TIMESTAMP_CHECKS)[number], string> = {
  status: 'status granted',
  imprint: 'imprint = image_hash',
  signature: 'signature',
  essCertIdV2: 'ESSCertIDv2',
  eku: 'EKU timeStamping',
  tsaName: 'TSA name',
  policy: 'policy',
  chain: 'chain to root',
};

/** The overall status as the reports print it. */
export const STATUS_WORD = { verified: 'VERIFIED', pending: 'NOT ESTABLISHED', failed: 'NOT VERIFIED' } as const;

export function formatReport(report: ReceiptVerification): string[] {
  const lines: string[] = [];
  const row = (state: string, label: string, reason: string) => `  ${state.padEnd(9)}  ${label.padEnd(54)}  ${reason}`;
  lines.push(row(report.file.holds ? 'holds' : 'fails', 'file: SHA-256 = image_hash', report.file.reason));
  if (report.verdict === null) {
    for (const p of report.problems) lines.push(row('fails', 'receipt', p));
  } else {
    for (const name of PROOF_NAMES) {
      const proof = report.verdict.proofs[name];
      lines.push(row(proof.state, PROOF_TITLES[name], proof.reason));
      if (name === 'timestamp' && report.timestamp_checks && proof.state !== 'holds') {
        for (const id of TIMESTAMP_CHECKS) {
          const c = report.timestamp_checks[id];
          lines.push(row('', `  · ${TIMESTAMP_LABELS[id]}`, `${c.result}: ${c.reason}`));
        }
      }
    }
  }
  lines.push('');
  lines.push(`root: ${report.root.detail}`);
  lines.push(`ML-DSA-65 key: ${report.pq_key.detail}`);
  lines.push(`wallet: ${report.wallet.detail}`);
  if (report.timestamp.gen_time) lines.push(`time-stamped: ${report.timestamp.gen_time}${report.timestamp.tsa ? ` by ${report.timestamp.tsa}` : ''}`);
  const l = report.ledger;
  if (l) {
    const read = l.checked_at === null ? 'not read (use --rpc URL)' : `${l.confirmations} confirmation${l.confirmations === 1 ? '' : 's'} as of ${l.checked_at}`;
    const final = l.final ? `, final since ${l.final_since ?? '?'}` : '';
    lines.push(`ledger: ${l.tx_hash} on chain ${l.chain_id}, ${read}${final}`);
  }
  lines.push(`${STATUS_WORD[report.status]}: ${report.detail}`);
  return lines;
}
