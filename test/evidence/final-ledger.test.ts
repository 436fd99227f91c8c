/**
 * The stored final receipt (lib/evidence/final-ledger.ts) as the one verdict serves it
 * (verdict.ts, ledger `final`): served only while it still describes the record's transaction,
 * with confirmations frozen at finality, and its input data checked again offline.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { storedFinalReceipt } from '../../lib/evidence/final-ledger.js';
import { anchorLeafHash, hashChildren } from '../../lib/evidence/merkle.js';
import { checkTimestamp } from '../../lib/evidence/proof-check.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from '../../lib/evidence/records.js';
import { judgeEvidence } from '../../lib/evidence/verdict.js';
import { encodeAnchorData, encodeBatchData } from '../../lib/ledger/anchor-data.js';

const IMAGE = 'a1'.repeat(32);
const STATEMENT = JSON.stringify({ image_hash: IMAGE });
const SERVER = sha256Hex(STATEMENT);

/** The ledger part of the one verdict for a record served from its final receipt. */
function finalLedgerCheck(f: FinalLedgerReceipt, item: AnchoredEvidence) {
  const v = judgeEvidence({
    bundle: {
      image_hash: item.image_hash,
      server_hash: item.server_hash,
      statement: STATEMENT,
      anchored_at: '2026-11-25T09:00:00.000Z',
      pq: { public_key: new Uint8Array(), signature: new Uint8Array() },
      device: { public_key_hex: '', signature_hex: '', chain_index: 0, chain_hash: '', previous_hash: null },
      ...(item.merkle ? { merkle: item.merkle } : {}),
      tx_hash: `0x${'cd'.repeat(32)}`,
    },
    timestamp: checkTimestamp(null, 'not under test'),
    timestampRootTrusted: true,
    trustedPqKeys: [],
    ledger: { kind: 'final', receipt: f },
  });
  return { valid: v.proofs.ledger.state === 'holds', ...v.ledger, overall: v.status, statement: v.proofs.statement.state };
}

const final: FinalLedgerReceipt = {
  block_number: 42,
  block_hash: `0x${'ab'.repeat(32)}`,
  block_time: '2026-11-25T10:00:00.000Z',
  confirmations: 3,
  from: '0x1111111111111111111111111111111111111111',
  finality: 'finalized',
  recorded_at: '2026-11-25T10:01:00.000Z',
  tx_hash: `0x${'cd'.repeat(32)}`,
  input_data: encodeAnchorData(IMAGE, SERVER),
};
const record = (over: Partial<AnchoredEvidence> = {}) =>
  ({ image_hash: IMAGE, server_hash: SERVER, tx_hash: `0x${'cd'.repeat(32)}`, tx_status: 'confirmed', block_number: 42, ledger_address: '0x1111111111111111111111111111111111111111', ledger_final: final, ...over }) as AnchoredEvidence;

describe('a stored final receipt', () => {
  it('is served as a holding, confirmed, final ledger proof with the confirmations at finality', () => {
    const f = storedFinalReceipt(record());
    assert.ok(f);
    const check = finalLedgerCheck(f, record());
    assert.equal(check.valid, true);
    assert.deepEqual(
      [check.status, check.block_number, check.confirmations, check.data_matches, check.from, check.final, check.final_since, check.block_time, check.checked_at],
      ['confirmed', 42, 3, true, final.from, true, final.recorded_at, final.block_time, final.recorded_at],
    );
  });

  it('is not served when it no longer describes the record: another wallet, block or transaction, not confirmed, or none', () => {
    assert.equal(storedFinalReceipt(record({ ledger_address: '0x2222222222222222222222222222222222222222' })), undefined);
    assert.equal(storedFinalReceipt(record({ block_number: 43 })), undefined);
    assert.equal(storedFinalReceipt(record({ tx_status: 'pending' })), undefined);
    assert.equal(storedFinalReceipt(record({ ledger_final: undefined })), undefined);
    assert.equal(storedFinalReceipt(record({ ledger_final: { ...final, input_data: undefined } })), undefined, 'stored without its input data: the chain is read');
    assert.equal(storedFinalReceipt(record({ tx_hash: `0x${'ef'.repeat(32)}` })), undefined, 'the record names another transaction');
    assert.equal(storedFinalReceipt(record({ ledger_final: { ...final, tx_hash: undefined } })), undefined, 'stored without its transaction hash: the chain is read');
  });

  it('checks the input data again, offline: a record whose statement or server_hash changed since fails', () => {
    const changedHash = finalLedgerCheck(final, record({ server_hash: 'c3'.repeat(32) }));
    assert.equal(changedHash.overall, 'failed');
    assert.equal(changedHash.statement, 'fails', 'the stated server_hash is not the statement\'s hash');
    const otherData = finalLedgerCheck({ ...final, input_data: encodeAnchorData(IMAGE, 'c3'.repeat(32)) }, record());
    assert.equal(otherData.valid, false);
    assert.equal(otherData.data_matches, false);
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
