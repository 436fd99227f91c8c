/**
 * The stored final receipt as a ledger verdict (lib/evidence/final-ledger.ts): served only while it
 * still describes the record's transaction, with confirmations frozen at finality.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { finalLedgerCheck, storedFinalReceipt } from '../../lib/evidence/final-ledger.js';
import { anchorLeafHash, hashChildren } from '../../lib/evidence/merkle.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from '../../lib/evidence/records.js';
import { encodeAnchorData, encodeBatchData } from '../../lib/ledger/anchor-data.js';

const IMAGE = 'a1'.repeat(32);
const SERVER = 'b2'.repeat(32);

const final: FinalLedgerReceipt = {
  block_number: 42,
  block_hash: `0x${'ab'.repeat(32)}`,
  block_time: '2026-11-25T10:00:00.000Z',
  confirmations: 3,
  from: '0x1111111111111111111111111111111111111111',
  finality: 'finalized',
  recorded_at: '2026-11-25T10:01:00.000Z',
  input_data: encodeAnchorData(IMAGE, SERVER),
};
const record = (over: Partial<AnchoredEvidence> = {}) =>
  ({ image_hash: IMAGE, server_hash: SERVER, tx_status: 'confirmed', block_number: 42, ledger_address: '0x1111111111111111111111111111111111111111', ledger_final: final, ...over }) as AnchoredEvidence;

describe('a stored final receipt', () => {
  it('is served as a valid, confirmed verdict with the confirmations at finality', () => {
    const f = storedFinalReceipt(record());
    assert.ok(f);
    assert.deepEqual(finalLedgerCheck(f, record()), { found: true, valid: true, status: 'confirmed', block_number: 42, confirmations: 3, data_matches: true, from: final.from, final });
  });

  it('is not served when it no longer describes the record: another wallet, another block, not confirmed, or none', () => {
    assert.equal(storedFinalReceipt(record({ ledger_address: '0x2222222222222222222222222222222222222222' })), undefined);
    assert.equal(storedFinalReceipt(record({ block_number: 43 })), undefined);
    assert.equal(storedFinalReceipt(record({ tx_status: 'pending' })), undefined);
    assert.equal(storedFinalReceipt(record({ ledger_final: undefined })), undefined);
    assert.equal(storedFinalReceipt(record({ ledger_final: { ...final, input_data: undefined } })), undefined, 'stored without its input data: the chain is read');
  });

  it('checks the input data again, offline: a record whose server_hash changed since fails', () => {
    const verdict = finalLedgerCheck(final, record({ server_hash: 'c3'.repeat(32) }));
    assert.equal(verdict.valid, false);
    assert.equal(verdict.data_matches, false);
  });

  it('batch mode: the stored inclusion path must still lead to the root the transaction carried', () => {
    const leaves = [anchorLeafHash(IMAGE, SERVER), anchorLeafHash('d4'.repeat(32), 'e5'.repeat(32))];
    const root = hashChildren(leaves[0]!, leaves[1]!).toString('hex'); // RFC 6962: a tree of two leaves
    const merkle = { root, leaf_index: 0, tree_size: 2, path: [leaves[1]!.toString('hex')] };
    const batched = { ...final, input_data: encodeBatchData(root) };
    assert.equal(finalLedgerCheck(batched, record({ merkle, ledger_final: batched })).valid, true);
    const flipped = leaves[1]!.toString('hex').replace(/^./, (c) => (c === '0' ? '1' : '0'));
    assert.equal(finalLedgerCheck(batched, record({ merkle: { ...merkle, path: [flipped] }, ledger_final: batched })).valid, false);
  });
});
