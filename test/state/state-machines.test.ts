/**
 * The state machines of lib/state-machines.ts, docs/state-machines.md and the repositories agree:
 * the document carries exactly the code's tables; no transition goes back unless it says why that
 * is safe; and, against the real embedded DynamoDB, each transition of the evidence item, the
 * batch seal, the digest offer and the own evidence record lands from the state and version it was
 * computed from, and never a second time from the same read (two invocations deciding from one
 * read: exactly one write lands).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { getArchiveStore } from '../../lib/deps/archive.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import type { ArchiveStore, DigestOffer, OwnRecord } from '../../lib/evidence/archive-store.js';
import { waitingDigest } from '../../lib/evidence/archive-store.js';
import type { BatchSeal, BatchStore } from '../../lib/evidence/batch-store.js';
import type { AnchorClaim, EvidenceItem, SignedProofs, StoredTx } from '../../lib/evidence/records.js';
import type { EvidenceRepository } from '../../lib/evidence/repository.js';
import { BATCH_SEAL, DIGEST_OFFER, EVIDENCE_ITEM, LEDGER_SLOT, OWN_RECORD, STATE_MACHINES, type StateMachine } from '../../lib/state-machines.js';
import { BatchTable } from '../../lib/store/batch-table.js';
import { useStack } from '../support/stack.js';
import { renderMachine } from './render.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

describe('the state machines, written once', () => {
  it('docs/state-machines.md carries exactly the tables of lib/state-machines.ts', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'state-machines.md'), 'utf8');
    for (const m of STATE_MACHINES) assert.ok(doc.includes(renderMachine(m)), `the table of the ${m.record} in docs/state-machines.md differs from the code's:\n${renderMachine(m)}`);
  });

  it('every transition starts and ends in a state of its machine', () => {
    for (const m of STATE_MACHINES) {
      for (const [name, t] of Object.entries(m.transitions)) {
        for (const s of [...t.from.split('|'), t.to]) assert.ok(m.states.includes(s), `${m.record}.${name}: ${s} is not one of ${m.states.join(', ')}`);
      }
    }
  });

  it('no transition leads to an earlier state unless it says why going back is safe', () => {
    const backs: string[] = [];
    for (const m of STATE_MACHINES) {
      const rank = (s: string) => m.states.indexOf(s);
      for (const [name, t] of Object.entries(m.transitions)) {
        const back = t.from.split('|').some((f) => rank(t.to) < rank(f));
        if (back) {
          assert.ok(t.back && t.back.length > 20, `${m.record}.${name} goes from ${t.from} back to ${t.to} without saying why that is safe`);
          backs.push(`${m.record}.${name}`);
        } else assert.equal(t.back, undefined, `${m.record}.${name} is marked back but goes forward`);
      }
    }
    // The two moves back, and no more: a seal claim given back, a dead slot refilled. (The evidence
    // item has none: nothing of an anchor is on it before it publishes, and a publish is never undone.)
    assert.deepEqual(backs.sort(), ['batch seal.abandon', 'ledger slot.fill']);
  });

  it('anchored evidence has no way out but forward: a published anchor is never undone', () => {
    const m: StateMachine = EVIDENCE_ITEM;
    for (const [name, t] of Object.entries(m.transitions)) {
      if (t.from.split('|').some((f) => f === 'publishing' || f.startsWith('anchored'))) assert.notEqual(t.to, 'none', `${name} would undo a published anchor`);
    }
    assert.equal(LEDGER_SLOT.transitions.persist.to, 'signed');
  });
});

// ─── against the database ───────────────────────────────────────────────────────────────────────

let repo: EvidenceRepository;
let seals: BatchStore;
let archive: ArchiveStore;

before(async () => {
  await useStack();
  repo = getEvidenceRepo();
  seals = new BatchTable(getDb(), getConfig().tables.batches);
  archive = getArchiveStore();
});

const hex = (n = 32) => randomBytes(n).toString('hex');

function claimOf(imageHash: string, fingerprint = hex()): AnchorClaim {
  const now = Date.now();
  const claimId = randomUUID();
  return {
    image_hash: imageHash,
    claim_id: claimId,
    fingerprint,
    account_id: 'acc_state_machines',
    api_version: 'v2',
    public_key_hex: hex(),
    signature_hex: hex(64),
    chain_index: 0,
    chain_hash: hex(),
    previous_hash: null,
    anchored_at: new Date(now).toISOString(),
    quota_counter: 'meter#acc_state_machines#2026-11',
    quota_hold: `a:${now}:${imageHash}:${claimId}`,
  };
}

const PROOFS: SignedProofs = {
  statement: '{}',
  server_hash: hex(),
  pq_algorithm: 'ML-DSA-65',
  pq_key_id: 'k',
  pq_public_key: 'AA==',
  pq_signature: 'AA==',
  tsa_response: 'AA==',
  tsa_gen_time: new Date().toISOString(),
  tsa_serial: '1',
  tsa_policy: '1.2.3',
  tsa_certificates: [],
};

const txOf = (nonce: number, hash = `0x${hex()}`): StoredTx => ({ tx_hash: hash, tx_nonce: nonce, tx_raw: '0x02', ledger_address: `0x${hex(20)}`, ledger_chain_id: 31337 });

/** A hash published with a direct-mode transaction (or `tx`): the item as published. */
async function published(tx: StoredTx | { batch_pk: string; ledger_address: string; ledger_chain_id: number } = txOf(7)): Promise<EvidenceItem> {
  const r = await repo.publish(claimOf(hex()), PROOFS, tx);
  assert.ok(r.ok);
  return r.item;
}

async function stored(imageHash: string): Promise<EvidenceItem> {
  return (await repo.get(imageHash)) as EvidenceItem;
}

describe('evidence item: each transition lands from the state and version read, and never twice from one read', () => {
  it('publish: exactly one publish of a hash lands, with every proof; the loser gets the item as it stands', async () => {
    const h = hex();
    const [a, b] = await Promise.all([repo.publish(claimOf(h), PROOFS, txOf(1)), repo.publish(claimOf(h), PROOFS, txOf(2))]);
    assert.equal([a, b].filter((r) => r.ok).length, 1);
    const lost = [a, b].find((r) => !r.ok);
    assert.equal(lost && !lost.ok ? lost.current?.anchor_state : undefined, 'publishing');
    const now = await stored(h);
    assert.equal(now.anchor_state, 'publishing');
    assert.equal(now.anchor_v, 1);
    assert.equal(now.server_hash, PROOFS.server_hash);
    assert.equal(now.tx_hash, (a.ok ? a.item : (b as { item: EvidenceItem }).item).tx_hash);
  });

  it('bar: a barred claim can never publish; another claim of the hash still can; an anchored hash is not barred', async () => {
    const h = hex();
    const lapsed = claimOf(h);
    assert.equal(await repo.barClaim(h, lapsed.claim_id), 'barred');
    assert.equal(await repo.barClaim(h, lapsed.claim_id), 'barred', 'twice: the same');
    const refused = await repo.publish(lapsed, PROOFS, txOf(3));
    assert.equal(refused.ok, false, 'the barred claim');
    const retry = await repo.publish(claimOf(h, lapsed.fingerprint), PROOFS, txOf(4));
    assert.ok(retry.ok, 'the identical retry, a new claim');
    assert.equal(await repo.barClaim(h, randomUUID()), 'anchored');
    assert.equal((await stored(h)).anchor_state, 'publishing');
  });

  it('replace: of two resumers that found the transaction dead, one stores its replacement, even when both signed the same transaction', async () => {
    const publishing = await published(txOf(7));
    // Both re-signed nonce 9 with the same data and fees: the same hash (the root-twice defect).
    const same = txOf(9);
    const [a, b] = await Promise.all([repo.replaceTx(publishing, same), repo.replaceTx(publishing, { ...same })]);
    assert.equal([a, b].filter((r) => r !== null).length, 1, 'exactly one replacement lands');
    const now = await stored(publishing.image_hash);
    assert.equal(now.tx_hash, same.tx_hash);
    assert.equal(now.anchor_v, (publishing.anchor_v ?? 0) + 1);
    assert.equal(await repo.replaceTx(publishing, txOf(10)), null, 'a third, from the same read: no');
  });

  it('rebatch: a left-out leaf moves to the next window once per read', async () => {
    const batch = { batch_pk: `31337#0x${hex(20)}#250#1000`, ledger_address: `0x${hex(20)}`, ledger_chain_id: 31337 };
    const publishing = await published(batch);
    const item = publishing;
    const moved = await repo.moveToBatch(publishing, `${batch.batch_pk}0`);
    assert.equal(moved?.batch_pk, `${batch.batch_pk}0`);
    assert.equal(await repo.moveToBatch(publishing, `${batch.batch_pk}1`), null);
    assert.equal((await stored(item.image_hash)).batch_pk, `${batch.batch_pk}0`);
  });

  it('anchor, confirm, finalize: each once from its read; an anchored item never goes back to publishing', async () => {
    const publishing = await published(txOf(11));
    const anchored = await repo.markAnchored(publishing, null);
    assert.equal(anchored?.anchor_state, 'anchored');
    assert.equal(anchored?.tx_status, 'pending');
    assert.equal(await repo.markAnchored(publishing, null), null, 'anchor from the same read');
    assert.equal(await repo.moveToBatch(publishing, 'x'), null);
    assert.equal(await repo.replaceTx(publishing, txOf(12)), null);

    const confirmed = await repo.setTxStatus(anchored as EvidenceItem, 'confirmed', 5, new Date().toISOString());
    assert.equal(confirmed?.tx_status, 'confirmed');
    assert.equal(await repo.setTxStatus(anchored as EvidenceItem, 'failed', 5, new Date().toISOString()), null, 'a second receipt from the same read');

    const final = { block_number: 5, block_hash: `0x${hex()}`, block_time: new Date().toISOString(), confirmations: 1, from: '0x', finality: 'latest' as const, recorded_at: new Date().toISOString() };
    assert.equal(await repo.recordFinalLedger(confirmed as EvidenceItem, final), true);
    assert.equal(await repo.recordFinalLedger(confirmed as EvidenceItem, final), false);
    const now = await stored(publishing.image_hash);
    assert.equal(now.anchor_state, 'anchored');
    assert.equal(now.tx_status, 'confirmed');
    assert.ok(now.ledger_final);
    assert.equal(now.anchor_v, (publishing.anchor_v ?? 0) + 3);
  });

  it('follow: an anchored, pending item names a fee-bumped version of its transaction; a confirmed one does not move', async () => {
    const publishing = await published(txOf(13));
    const anchored = (await repo.markAnchored(publishing, null)) as EvidenceItem;
    const bumped = `0x${hex()}`;
    assert.equal(await repo.replaceTxHash(anchored.image_hash, anchored.tx_hash as string, bumped, [anchored.tx_hash as string, bumped]), true);
    assert.equal((await stored(anchored.image_hash)).tx_hash, bumped);
    const current = await stored(anchored.image_hash);
    await repo.setTxStatus(current, 'confirmed', 9, new Date().toISOString());
    assert.equal(await repo.replaceTxHash(anchored.image_hash, bumped, `0x${hex()}`, []), false);
  });

  it('refuses to attempt a transition from a state it does not start from (a programming error, not a race)', async () => {
    const item = await stored((await published(txOf(14))).image_hash);
    const anchored = (await repo.markAnchored(item, null)) as EvidenceItem;
    await assert.rejects(repo.markAnchored(anchored, null), /starts from publishing/);
  });
});

describe('batch seal: each transition lands from the state and version read, and never twice from one read', () => {
  const pk = () => `31337#0x${hex(20)}#250#${Date.now()}`;
  const contents = { images: Buffer.alloc(32, 1), leaves: Buffer.alloc(32, 2), root: hex(), tree_size: 1, sealed_at: new Date().toISOString() };

  it('claim once; take over only a lapsed claim, once per read; the old sealer cannot seal', async () => {
    const p = pk();
    const [a, b] = await Promise.all([seals.claimSeal(p, 'a', Date.now() - 1), seals.claimSeal(p, 'b', Date.now() - 1)]);
    assert.equal([a, b].filter(Boolean).length, 1);
    const first = (a ?? b) as BatchSeal;
    const taken = await seals.takeOverSeal(p, first, 'c', Date.now() + 60_000, Date.now());
    assert.equal(taken?.sealer_id, 'c');
    assert.equal(await seals.takeOverSeal(p, first, 'd', Date.now() + 60_000, Date.now()), null, 'from the same read');
    assert.equal(await seals.takeOverSeal(p, taken as BatchSeal, 'e', Date.now() + 60_000, Date.now()), null, 'a live lease is not taken over');
    assert.equal(await seals.markSealed(p, first, contents, txOf(1)), null, 'the sealer that lost its claim stores nothing');
    const sealed = await seals.markSealed(p, taken as BatchSeal, contents, txOf(1));
    assert.equal(sealed?.state, 'sealed');
    assert.equal((await seals.getSeal(p))?.v, 3);
  });

  it('replace: of two resumers that found the sealed transaction dead, one replaces it, even with the same transaction', async () => {
    const p = pk();
    const claim = (await seals.claimSeal(p, 's', Date.now() + 60_000)) as BatchSeal;
    const sealed = (await seals.markSealed(p, claim, contents, txOf(1))) as BatchSeal;
    const same = txOf(2);
    const [a, b] = await Promise.all([seals.replaceSealTx(p, sealed, same), seals.replaceSealTx(p, sealed, { ...same })]);
    assert.equal([a, b].filter(Boolean).length, 1, 'exactly one replacement lands');
    assert.equal((await seals.getSeal(p))?.tx_hash, same.tx_hash);
    assert.equal(await seals.replaceSealTx(p, sealed, txOf(3)), null);
  });

  it('abandon: only the claim holder gives an unsealed claim back, and the next claim counts on from its version', async () => {
    const p = pk();
    const claim = (await seals.claimSeal(p, 's', Date.now() + 60_000)) as BatchSeal;
    await seals.abandonSeal(p, { ...claim, sealer_id: 'someone else' });
    assert.equal((await seals.getSeal(p))?.state, 'sealing', 'not given back by another');
    await seals.abandonSeal(p, claim);
    assert.equal(await seals.getSeal(p), undefined);
    const again = await seals.claimSeal(p, 't', Date.now() + 60_000);
    assert.equal(again?.v, 3);
    assert.equal(await seals.markSealed(p, claim, contents, txOf(4)), null, 'the claim given back cannot seal');
  });
});

describe('digest offer and own record: each move lands from the state and version read, and never twice from one read', () => {
  const digest = () => Uint8Array.from(randomBytes(64));
  const offerOf = (imageHash: string, d: Uint8Array) => ({ image_hash: imageHash, algorithm: 'SHA-512' as const, digest: d, offered_at: new Date().toISOString() });
  const read = async (imageHash: string) => (await archive.getDigestOffer(imageHash, 'SHA-512')) as DigestOffer;
  const hexOf = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');

  it('offer, postpone, use: once each from a read; the latest offer wins until it is used; an offer corrected meanwhile is not used', async () => {
    const h = hex();
    const [a, b] = await Promise.all([archive.offerDigest(offerOf(h, digest()), undefined), archive.offerDigest(offerOf(h, digest()), undefined)]);
    assert.equal([a, b].filter(Boolean).length, 1, 'two first offers from "none": one lands');
    const first = await read(h);
    assert.deepEqual([first.state, first.v], ['offered', 1]);
    const latest = digest();
    assert.equal(await archive.offerDigest(offerOf(h, latest), first), true);
    assert.equal(await archive.offerDigest(offerOf(h, digest()), first), false, 'a second offer from the same read');
    const second = await read(h);
    assert.equal(hexOf(second.digest), hexOf(latest));
    assert.equal(await archive.markDigestUsed(first), false, 'the job read the offer before the latest one: it is not used');
    await archive.postponeDigest(second, new Date(Date.now() + 60_000).toISOString());
    assert.equal(await archive.markDigestUsed(second), false, 'postponed since the read');
    const third = await read(h);
    assert.deepEqual([third.state, third.v], ['offered', 3]);
    assert.equal(await archive.markDigestUsed(third), true);
    assert.equal(await archive.markDigestUsed(third), false, 'used once from a read');
    const used = await read(h);
    assert.deepEqual([used.state, used.v, hexOf(used.used_digest)], ['used', 4, hexOf(latest)]);
    assert.equal(waitingDigest(used), undefined, 'nothing waits once used');
  });

  it('correct, hold, redo: a used offer never goes back to offered; a correction waits until the redo is recorded, once per read', async () => {
    const h = hex();
    const original = digest();
    assert.equal(await archive.offerDigest(offerOf(h, original), undefined), true);
    assert.equal(await archive.markDigestUsed(await read(h)), true);
    const used = await read(h);
    const corrected = digest();
    assert.equal(await archive.offerDigest(offerOf(h, corrected), used), true);
    assert.equal(await archive.offerDigest(offerOf(h, digest()), used), false, 'a second correction from the same read');
    const waiting = await read(h);
    assert.equal(waiting.state, 'used', 'a correction keeps the offer used');
    assert.equal(hexOf(waitingDigest(waiting)), hexOf(corrected));
    assert.equal(hexOf(waiting.used_digest), hexOf(original));
    await archive.postponeDigest(waiting, new Date(Date.now() + 60_000).toISOString());
    assert.equal(await archive.markDigestUsed(waiting), false, 'held since the read');
    const held = await read(h);
    assert.equal(held.state, 'used');
    assert.equal(await archive.markDigestUsed(held), true);
    assert.equal(await archive.markDigestUsed(held), false, 'redone once from a read');
    const redone = await read(h);
    assert.deepEqual([redone.state, hexOf(redone.used_digest), waitingDigest(redone)], ['used', hexOf(corrected), undefined]);
  });

  it('rehash, renew, redo of an own record: each lands once from the version read', async () => {
    const h = hex();
    const own = (n: number): OwnRecord => ({ image_hash: h, v: n, record: Uint8Array.from([n]), renew_at: new Date().toISOString(), algorithm: 'SHA-512', tsa_not_after: new Date().toISOString() });
    const [a, b] = await Promise.all([archive.putOwnRecord(own(1), undefined), archive.putOwnRecord(own(1), undefined)]);
    assert.equal([a, b].filter(Boolean).length, 1, 'rehash: one lands');
    assert.equal((await archive.getOwnRecord(h))?.v, 1);
    const [c, d] = await Promise.all([archive.putOwnRecord(own(2), 1, 'redo'), archive.putOwnRecord(own(2), 1, 'renew')]);
    assert.equal([c, d].filter(Boolean).length, 1, 'a redo and a renewal from the same read: one lands');
    assert.equal(await archive.putOwnRecord(own(3), 1, 'redo'), false, 'from a version moved on');
    const now = await archive.getOwnRecord(h);
    assert.deepEqual([now?.v, now?.record[0]], [2, 2]);
  });
});

// Keep the batch-seal machine's table and these tests in step: a transition added to it needs a test here.
assert.deepEqual(Object.keys(BATCH_SEAL.transitions).sort(), ['abandon', 'claim', 'replace', 'seal', 'takeOver']);
assert.deepEqual(Object.keys(EVIDENCE_ITEM.transitions).sort(), ['anchor', 'bar', 'confirm', 'fail', 'finalize', 'follow', 'publish', 'rebatch', 'replace']);
assert.deepEqual(Object.keys(DIGEST_OFFER.transitions).sort(), ['correct', 'hold', 'offer', 'postpone', 'redo', 'use']);
assert.deepEqual(Object.keys(OWN_RECORD.transitions).sort(), ['postpone', 'redo', 'rehash', 'renew']);
