/**
 * The state machines of every record that anchoring writes, in one place: each state, who may
 * move it, to what, and under which condition. docs/state-machines.md is this table in prose; a
 * test keeps the two identical, and the store's tables (lib/store) name the transition of each write they make.
 *
 * Every transition is one conditional single-item write (DynamoDB, no transactions) from the
 * state AND version the writer read to the next state and version + 1 (lib/store/versioned.ts).
 * A writer whose condition fails re-reads and decides again; nothing overwrites a newer state.
 * States are listed in order: a transition never leads to an earlier state, except the few
 * marked `back`, each allowed only while what it discards never left the service.
 * `from` may name alternatives (`signed|sent`).
 *
 * Pure data: imported by the domain, the adapters and the tests alike.
 */

export interface Transition {
  /** The state it starts from; 'none' when the record (or its state) does not exist. */
  from: string;
  to: string;
  /** Who may make it. */
  by: string;
  /** The condition beyond "the state and version as read". */
  when: string;
  /**
   * A move to an earlier state, with why it is safe. Only these may go back, and each only while
   * nothing that it discards ever left the service.
   */
  back?: string;
}

export interface StateMachine {
  record: string;
  /** Where the record lives and which attributes hold its state and version. */
  stored: string;
  /** Its states, in order ('none' first). */
  states: readonly string[];
  transitions: Readonly<Record<string, Transition>>;
}

/** The evidence item of an image hash (evidence table): the anchor's state machine. */
export const EVIDENCE_ITEM = {
  record: 'evidence item',
  stored: 'evidence table, key image_hash; anchor_state, anchor_v (tx_status for the anchored sub-states)',
  states: ['none', 'publishing', 'anchored:pending', 'anchored:confirmed', 'anchored:failed', 'anchored:final'],
  transitions: {
    publish: {
      from: 'none',
      to: 'publishing',
      by: 'the anchor request (v1 or v2) that holds the chain link (its claim id): this write claims the hash',
      when: 'no anchor is on the hash and the claim is not barred; every proof is made; direct mode: with the signed transaction, BEFORE its broadcast; batch mode: with the batch of the window open now, before its leaf; no read first',
    },
    bar: {
      from: 'none',
      to: 'none',
      by: 'whoever frees a chain link whose claim lapsed, and the reconciliation before it refunds the quota hold of such a claim',
      when: 'no anchor is on the hash and the claim\'s lease lapsed: its id joins dead_claims, so that its publish can never land',
    },
    rebatch: {
      from: 'publishing',
      to: 'publishing',
      by: 'any invocation that read the sealed batch the item names',
      when: 'batch mode: the batch was sealed without the item\'s leaf; the item names the window open now',
    },
    replace: {
      from: 'publishing',
      to: 'publishing',
      by: 'the one invocation whose write wins; the losers\' transactions are never stored nor sent',
      when: 'direct mode: the named transaction can never be mined (its nonce is held by another transaction of ours, or was used on the chain by one not ours)',
    },
    anchor: {
      from: 'publishing',
      to: 'anchored:pending',
      by: 'any invocation (the request, its identical retry, the reconciler)',
      when: 'the transaction was handed to the node (direct) or the sealed batch holds the leaf (batch: with its inclusion proof); the 200 can be sent',
    },
    confirm: {
      from: 'anchored:pending',
      to: 'anchored:confirmed',
      by: 'any invocation that read the receipt',
      when: 'a version of the named transaction is mined and succeeded',
    },
    fail: {
      from: 'anchored:pending',
      to: 'anchored:failed',
      by: 'any invocation that read the receipt',
      when: 'a version of the named transaction is mined and reverted',
    },
    follow: {
      from: 'anchored:pending',
      to: 'anchored:pending',
      by: 'the ledger re-send job after a fee bump',
      when: 'the item names an earlier version of the same nonce',
    },
    finalize: {
      from: 'anchored:confirmed',
      to: 'anchored:final',
      by: 'the reconciler',
      when: 'the receipt is final (read from the chain and checked once)',
    },
  },
} as const satisfies StateMachine;

/** The seal of a ledger batch (batches table): one per window of one chain and wallet. */
export const BATCH_SEAL = {
  record: 'batch seal',
  stored: 'batches table, key (batch pk, "seal"); state, v',
  states: ['none', 'sealing', 'sealed'],
  transitions: {
    claim: {
      from: 'none',
      to: 'sealing',
      by: 'a waiter of the batch, once its window has ended (plus a grace for leaf writes in flight)',
      when: 'nobody claimed it yet; under a lease; no read first',
    },
    takeOver: {
      from: 'sealing',
      to: 'sealing',
      by: 'another waiter',
      when: 'the sealer\'s lease lapsed',
    },
    abandon: {
      from: 'sealing',
      to: 'none',
      by: 'the sealer itself',
      when: 'its own claim (sealer id as read)',
      back: 'nothing was stored under the claim (the ledger or the database failed before the seal)',
    },
    seal: {
      from: 'sealing',
      to: 'sealed',
      by: 'the sealer holding the claim',
      when: 'the leaves, read strongly consistent, their root and the signed transaction carrying it, BEFORE its broadcast',
    },
    replace: {
      from: 'sealed',
      to: 'sealed',
      by: 'the one invocation whose write wins; the losers\' transactions are never stored nor sent',
      when: 'the named transaction can never be mined (its nonce is held by another transaction of ours, or was used on the chain by one not ours)',
    },
  },
} as const satisfies StateMachine;

/**
 * A ledger slot (ledger table, one per nonce of the wallet): the arbiter of its nonce. A
 * transaction is broadcast only while its slot holds it, so at most one transaction per nonce
 * ever leaves the service, whatever the owners (evidence items, seals) believe.
 */
export const LEDGER_SLOT = {
  record: 'ledger slot',
  stored: 'ledger table, key (tx#<wallet>, nonce); status, tx_hash (a status change is conditional on both)',
  states: ['none', 'released', 'signed', 'sent', 'conflict', 'confirmed', 'failed'],
  transitions: {
    persist: {
      from: 'none|released',
      to: 'signed',
      by: 'the submit holding the nonce, after the owner (evidence item or seal) stored the transaction; or resume() of an owner whose submit died before this write',
      when: 'the slot is empty, or released (its nonce was given back before any transaction was stored under it)',
    },
    tombstone: {
      from: 'none',
      to: 'released',
      by: 'resume()',
      when: 'the nonce was given back to the wallet before the slot was written: the owner\'s transaction never goes out',
    },
    send: {
      from: 'signed',
      to: 'sent',
      by: 'whoever broadcast it (the submit, resume(), the re-send job)',
      when: 'the node took it',
    },
    bump: {
      from: 'signed|sent',
      to: 'sent',
      by: 'the re-send job',
      when: 'unmined past LEDGER_REPLACE_AFTER_MINUTES: a new version of the same nonce and data with both fees raised ≥ 10 %',
    },
    mine: {
      from: 'signed|sent',
      to: 'confirmed',
      by: 'any receipt reader',
      when: 'a version is mined (failed when it reverted)',
    },
    revert: {
      from: 'signed|sent',
      to: 'failed',
      by: 'any receipt reader',
      when: 'a version is mined and reverted',
    },
    conflict: {
      from: 'signed|sent',
      to: 'conflict',
      by: 'resume(), the submit, the re-send job',
      when: 'the chain used the nonce for a transaction that is no version of ours (the wallet is used elsewhere)',
    },
    fill: {
      from: 'none|released|conflict',
      to: 'signed',
      by: 'the submit that gives up a nonce whose transaction an owner may hold (a failed write of unknown outcome), at once; the re-send job for older gaps',
      when: 'the slot is still empty (an owner\'s resume() that wrote it first keeps it); for the job, a nonce below the counter that nothing holds after the grace (its allocator died): an empty self-transaction',
      back: 'a released slot\'s transaction was never sent; a conflict slot\'s nonce was used on the chain by another transaction',
    },
  },
} as const satisfies StateMachine;

/**
 * An archive group (archive table, RFC 4998 evidence records: lib/evidence/archive.ts): the hash
 * tree over many anchored image hashes that one RFC 3161 token covers, and the timestamp renewals
 * of that chain. Made whole in one put (its id is the tree's root, so a retry over the same hashes
 * finds it and stamps nothing again); renewals append, each from the version read.
 */
export const ARCHIVE_GROUP = {
  record: 'archive group',
  stored: 'archive table, key grp#<root>; state, v (renew_shard, renew_at on the renewal_due index)',
  states: ['none', 'stamped'],
  transitions: {
    stamp: {
      from: 'none',
      to: 'stamped',
      by: 'the archive job',
      when: 'the tree over the hashes it read from the archive_due index is time-stamped; put if absent (a group of that root exists: that one stands)',
    },
    renew: {
      from: 'stamped',
      to: 'stamped',
      by: 'the archive job',
      when: 'renew_at has passed (the last token\'s TSA certificate nears its notAfter), or that certificate is retired (the TSA history lists it): a new archive timestamp over the chain\'s timestamps is appended, renew_at moves on',
    },
    postpone: {
      from: 'stamped',
      to: 'stamped',
      by: 'the archive job',
      when: 'renew_at has passed but the TSA\'s certificate reaches no further than the last token\'s: nothing is stamped, renew_at moves on a day',
    },
  },
} as const satisfies StateMachine;

/**
 * An anchored image hash as a member of an archive group (on its evidence item): it waits on the
 * sparse archive_due index from its anchor's own write until it names a group.
 */
export const ARCHIVE_MEMBER = {
  record: 'archive member',
  stored: 'evidence table, key image_hash; archive_shard (set: ungrouped), ers_group, ers_path',
  states: ['none', 'ungrouped', 'grouped'],
  transitions: {
    enqueue: {
      from: 'none',
      to: 'ungrouped',
      by: 'the anchor transition of the evidence item (the same write)',
      when: 'the item becomes anchored',
    },
    join: {
      from: 'ungrouped',
      to: 'grouped',
      by: 'the archive job, after its group is stored',
      when: 'the item is anchored and names no group yet; one write sets ers_group and ers_path and leaves the index (an item in a group already only leaves the index)',
    },
  },
} as const satisfies StateMachine;

/**
 * The evidence record of its own of one image hash (archive table), made by a hash-tree renewal
 * (RFC 4998 §5.2), whose first hash list depends on the member's earlier chains; renewed alone.
 * Its last chain was made from a digest the account gave, which the service cannot check: it is
 * served to whoever gives a digest that chain holds (GET …/evidence-record/{image_hash}?sha512=),
 * never in place of the group's record, and a corrected digest makes it again (redo).
 */
export const OWN_RECORD = {
  record: 'own evidence record',
  stored: 'archive table, key rec#<image_hash>; state, v (renew_shard, renew_at on the renewal_due index)',
  states: ['none', 'own'],
  transitions: {
    rehash: {
      from: 'none',
      to: 'own',
      by: 'the archive job\'s hash-tree renewal',
      when: 'the data\'s digest with the new algorithm was given (DIGEST_OFFER); no own record yet: the group\'s chain as it stands, then a chain made from the digest',
    },
    renew: {
      from: 'own',
      to: 'own',
      by: 'the archive job',
      when: 'a timestamp renewal (renew_at passed, or the last token\'s TSA certificate is retired) or another hash-tree renewal (a digest of a newer algorithm) on top of the record, from the version read',
    },
    redo: {
      from: 'own',
      to: 'own',
      by: 'the archive job\'s hash-tree renewal',
      when: 'the account corrected the digest its last chain was made from (DIGEST_OFFER.correct): that chain is made again from the corrected digest over the chains it was built on (the group\'s chain as it stands now when that is all of them; otherwise as stored, while their last certificate is valid), replacing it, from the version read. Only a chain the service cannot check is replaced; the record served without a digest is the group\'s, which no offer touches',
    },
    postpone: {
      from: 'own',
      to: 'own',
      by: 'the archive job',
      when: 'renew_at has passed but the TSA\'s certificate reaches no further than the last token\'s: nothing is stamped, renew_at moves on a day',
    },
  },
} as const satisfies StateMachine;

/**
 * The photo's digest with a new hash algorithm (archive table), offered by the account that
 * anchored it for a hash-tree renewal; used by the archive job. A digest waits while the offer is
 * `offered`, or `used` with a digest other than the one the record was renewed from (a correction).
 * `used` never goes back: a renewal was made from the offer, and a correction is a move of its own.
 */
export const DIGEST_OFFER = {
  record: 'digest offer',
  stored:
    'archive table, key dig#<image_hash>#<algorithm>; state, v, digest (the latest given), used_digest (the one the record was renewed from) (renew_shard, renew_at on the renewal_due index while a digest waits)',
  states: ['none', 'offered', 'used'],
  transitions: {
    offer: {
      from: 'none|offered',
      to: 'offered',
      by: 'the account that anchored the hash (POST /api/v2/evidence/evidence-record/{image_hash}/digest)',
      when: 'the algorithm is the one the service renews to (ARCHIVE_HASH_ALGORITHM); the latest offer wins until it is used; from the version read',
    },
    use: {
      from: 'offered',
      to: 'used',
      by: 'the archive job',
      when: 'the hash-tree renewal made from its digest is stored (OWN_RECORD.rehash, renew, or redo when the record was made from an earlier digest whose use lost to this offer), or the own record holds that digest already (a pass died before this write); from the version read, so an offer corrected meanwhile waits for the next pass',
    },
    postpone: {
      from: 'offered',
      to: 'offered',
      by: 'the archive job',
      when: 'it cannot be used yet: the hash\'s group is not made, the chains it would be built on are no longer valid, or the service renews to another algorithm now; due again later, from the version read',
    },
    correct: {
      from: 'used',
      to: 'used',
      by: 'the account that anchored the hash',
      when: 'a digest other than the one the record was renewed from (a slip corrected): it waits, due at once, for the archive job to redo the renewal; that one again while another waits: the correction is withdrawn. That one with none waiting: 409. From the version read',
    },
    redo: {
      from: 'used',
      to: 'used',
      by: 'the archive job',
      when: 'the renewal redone from the waiting digest is stored (OWN_RECORD.redo), or the own record holds that digest (a correction withdrawn, a pass died before this write): nothing waits any more; from the version read',
    },
    hold: {
      from: 'used',
      to: 'used',
      by: 'the archive job',
      when: 'a waiting correction cannot be used now: the chains it would be redone from are no longer valid, or the service renews to another algorithm now; due again later, from the version read',
    },
  },
} as const satisfies StateMachine;

/**
 * The archive job's look through the renewal_due index for the records whose last archive
 * timestamp a retired TSA certificate signed (archive table; lib/evidence/archive-retirement.ts):
 * one page per pass, its records renewed under the current TSA key before the page is recorded.
 * Not on any index; once swept, never looked at again.
 */
export const TSA_RETIREMENT_SWEEP = {
  record: 'TSA retirement sweep',
  stored: 'archive table, key ret#<certificate sha256>; state, v, sweep_cursor (on no index)',
  states: ['none', 'sweeping', 'swept'],
  transitions: {
    advance: {
      from: 'none|sweeping',
      to: 'sweeping',
      by: 'the archive job',
      when: 'a full page of the renewal_due index up to the certificate\'s renewal time was looked through and its records under a retired certificate were renewed: the cursor moves past it, from the version read',
    },
    finish: {
      from: 'none|sweeping',
      to: 'swept',
      by: 'the archive job',
      when: 'the last page was looked through and its records under a retired certificate were renewed, from the version read',
    },
  },
} as const satisfies StateMachine;

export const STATE_MACHINES: readonly StateMachine[] = [EVIDENCE_ITEM, BATCH_SEAL, LEDGER_SLOT, ARCHIVE_GROUP, ARCHIVE_MEMBER, OWN_RECORD, DIGEST_OFFER, TSA_RETIREMENT_SWEEP];
