/**
 * The stored final receipt as a ledger verdict (lib/evidence/final-ledger.ts): served only while it
 * still describes the record's transaction, with confirmations frozen at finality.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { finalLedgerCheck, storedFinalReceipt } from '../../lib/evidence/final-ledger.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from '../../lib/evidence/records.js';

const final: FinalLedgerReceipt = {
  block_number: 42,
  block_hash: `0x${'ab'.repeat(32)}`,
  block_time: '2026-11-25T10:00:00.000Z',
  confirmations: 3,
  from: '0x1111111111111111111111111111111111111111',
  finality: 'finalized',
  recorded_at: '2026-11-25T10:01:00.000Z',
};
const record = (over: Partial<AnchoredEvidence> = {}) =>
  ({ tx_status: 'confirmed', block_number: 42, ledger_address: '0x1111111111111111111111111111111111111111', ledger_final: final, ...over }) as AnchoredEvidence;

describe('a stored final receipt', () => {
  it('is served as a valid, confirmed verdict with the confirmations at finality', () => {
    const f = storedFinalReceipt(record());
    assert.ok(f);
    assert.deepEqual(finalLedgerCheck(f), { found: true, valid: true, status: 'confirmed', block_number: 42, confirmations: 3, data_matches: true, from: final.from, final });
  });

  it('is not served when it no longer describes the record: another wallet, another block, not confirmed, or none', () => {
    assert.equal(storedFinalReceipt(record({ ledger_address: '0x2222222222222222222222222222222222222222' })), undefined);
    assert.equal(storedFinalReceipt(record({ block_number: 43 })), undefined);
    assert.equal(storedFinalReceipt(record({ tx_status: 'pending' })), undefined);
    assert.equal(storedFinalReceipt(record({ ledger_final: undefined })), undefined);
  });
});
