import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LedgerRecords } from './records.js';

/**
 * The drain rule of a wallet rotation (docs/runbook.md "Rotating keys", Wallet): a wallet is
 * retired only when none of its persisted transactions can still need it. Its nonces, its
 * replacements and its resends are keyed by wallet (lib/ledger/nonces.ts, replacement.ts,
 * resend.ts) and run for the configured wallet only, so a slot still `signed` (persisted, maybe
 * never broadcast) or `sent` (not mined yet) of a wallet that no longer sends would never be
 * finished. This counts them: 0 means the wallet is drained.
 */
export async function unfinishedTransactions(db: DynamoDBDocumentClient, table: string, chainId: number, address: string): Promise<number> {
  const records = new LedgerRecords(db, table, chainId, () => new Date());
  const slots = await records.listSlots(address.toLowerCase());
  return slots.filter((s) => s.status === 'signed' || s.status === 'sent').length;
}
