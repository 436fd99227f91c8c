import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type ErsHash, isErsHash } from '../crypto/ers.js';
import type { SweepStep } from '../accounts/counter-repository.js';
import type { ArchiveGroup, ArchiveMembership, ArchiveStore, DigestOffer, OwnRecord, RenewalDue, RenewalPage, RetirementSweep, UngroupedHash } from '../evidence/archive-store.js';
import { ARCHIVE_GROUP, DIGEST_OFFER, OWN_RECORD, TSA_RETIREMENT_SWEEP } from '../state-machines.js';
import { tryWrite } from './conditional.js';
import { ARCHIVE_SHARD } from './evidence-table.js';
import { SegmentScan } from './segment-scan.js';
import { moveState } from './versioned.js';

/** The one partition of the archive table's renewal_due index (sorted by renew_at: a pass reads what is due, no more). */
const RENEW_SHARD = 'due';
const GROUP = 'grp#';
const RECORD = 'rec#';
const DIGEST = 'dig#';
/** A retired TSA certificate's sweep (never on the renewal_due index: it has no renew_shard). */
const RETIREMENT = 'ret#';

/**
 * The RFC 4998 evidence records behind the domain's ArchiveStore port (lib/evidence/archive-store.ts):
 * - the `archive` table (infra/tables.json): one item per archive group (`grp#<root>`) and per
 *   record of its own (`rec#<image_hash>`, after a hash-tree renewal), each on the sparse index
 *   renewal_due (renew_shard, renew_at) so that a renewal pass reads only what is due; digest
 *   offers (`dig#…`) on it while offered; and the sweeps of retired TSA certificates
 *   (`ret#<sha256>`), on no index;
 * - on the evidence item: `archive_shard` (set by the anchor's own write, lib/store/evidence-table.ts
 *   markAnchored: no extra request) puts an anchored hash on the archive_due index until it joins a
 *   group; the join sets `ers_group` and `ers_path` and removes it, in one conditional write.
 * Every write is a single-item conditional write named after its transition (lib/state-machines.ts).
 */
export class ArchiveTable implements ArchiveStore {
  private segments: SegmentScan | undefined;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { archive: string; evidence: string },
  ) {}

  async listUngrouped(limit: number): Promise<UngroupedHash[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.evidence,
        IndexName: 'archive_due',
        KeyConditionExpression: 'archive_shard = :s',
        ExpressionAttributeValues: { ':s': ARCHIVE_SHARD },
        Limit: limit,
      }),
    );
    return (r.Items ?? []).map((i) => ({ image_hash: String(i.image_hash), anchored_at: String(i.anchored_at) }));
  }

  /**
   * enqueue again (ARCHIVE_MEMBER.enqueue) every anchored item in no group and not on the
   * archive_due index (no `archive_shard`: an anchor from before the archive, or one whose
   * attribute was removed) among the next segment of the evidence table. An item that has the
   * attribute is on the index (DynamoDB keeps a GSI with its items) and waits already: it is not
   * written again, which before cost one write of a whole record per waiting anchor per sweep.
   */
  async sweepUngrouped(step: SweepStep): Promise<{ enqueued: number; complete: boolean }> {
    this.segments ??= new SegmentScan(this.db, {
      TableName: this.tables.evidence,
      ProjectionExpression: 'image_hash',
      FilterExpression: 'anchor_state = :anchored AND attribute_not_exists(ers_group) AND attribute_not_exists(archive_shard) AND attribute_exists(anchored_at)',
      ExpressionAttributeValues: { ':anchored': ARCHIVE_MEMBER_ANCHORED },
      ConsistentRead: true,
    });
    const segment = await this.segments.next(step.items, step.restart);
    let enqueued = 0;
    for (const item of segment.items) {
      const r = await tryWrite(
        this.db,
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: String(item.image_hash) },
          UpdateExpression: 'SET archive_shard = :s',
          ConditionExpression: 'anchor_state = :anchored AND attribute_not_exists(ers_group)',
          ExpressionAttributeValues: { ':s': ARCHIVE_SHARD, ':anchored': ARCHIVE_MEMBER_ANCHORED },
        }),
      );
      if (r.ok) enqueued++;
    }
    return { enqueued, complete: segment.complete };
  }

  async getGroup(id: string): Promise<ArchiveGroup | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.tables.archive, Key: { pk: GROUP + id }, ConsistentRead: true }));
    return r.Item ? toGroup(r.Item) : undefined;
  }

  /** stamp (none → stamped): put if absent; when one of that id exists (a retry), that one stands. */
  async putGroup(group: ArchiveGroup): Promise<ArchiveGroup> {
    const t = ARCHIVE_GROUP.transitions.stamp;
    const r = await tryWrite(
      this.db,
      new PutCommand({
        TableName: this.tables.archive,
        Item: {
          pk: GROUP + group.id,
          state: t.to,
          v: 1,
          algorithm: group.algorithm,
          size: group.size,
          time_stamp: group.timeStamp,
          renewals: [],
          created_at: group.created_at,
          renew_at: group.renew_at,
          tsa_not_after: group.tsa_not_after,
          renew_shard: RENEW_SHARD,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    if (r.ok) return { ...group, v: 1, renewals: [] };
    const stored = await this.getGroup(group.id);
    if (!stored) throw new Error(`archive group ${group.id}: the put was refused but the group is not there`);
    return stored;
  }

  /** join (ungrouped → grouped), or only leaving the index when the item is in a group already. */
  async join(imageHash: string, groupId: string, path: Uint8Array[][]): Promise<void> {
    const joined = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'SET ers_group = :g, ers_path = :p REMOVE archive_shard',
        // ARCHIVE_MEMBER.join: from ungrouped (no group yet) on an anchored item.
        ConditionExpression: 'attribute_exists(image_hash) AND attribute_not_exists(ers_group) AND anchor_state = :anchored',
        ExpressionAttributeValues: { ':g': groupId, ':p': path.map((list) => concat(list)), ':anchored': ARCHIVE_MEMBER_ANCHORED },
      }),
    );
    if (joined.ok) return;
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'REMOVE archive_shard',
        ConditionExpression: 'attribute_exists(image_hash)',
      }),
    );
  }

  async membership(imageHash: string): Promise<ArchiveMembership> {
    const r = await this.db.send(
      new GetCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        ProjectionExpression: 'anchor_state, ers_group, ers_path, anchored_at, account_id',
      }),
    );
    const item = r.Item;
    if (!item) return { anchored: false };
    const group = typeof item.ers_group === 'string' ? item.ers_group : undefined;
    const path = Array.isArray(item.ers_path) ? (item.ers_path as Uint8Array[]).map(split32) : undefined;
    return {
      anchored: item.anchor_state === ARCHIVE_MEMBER_ANCHORED,
      ...(group ? { group } : {}),
      ...(path ? { path } : {}),
      ...(typeof item.anchored_at === 'string' ? { anchored_at: item.anchored_at } : {}),
      ...(typeof item.account_id === 'string' ? { account_id: item.account_id } : {}),
    };
  }

  async listRenewalsDue(nowIso: string, limit: number): Promise<RenewalDue[]> {
    return (await this.listRenewalsUpTo(nowIso, limit)).due;
  }

  async listRenewalsUpTo(untilIso: string, limit: number, after?: string): Promise<RenewalPage> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.archive,
        IndexName: 'renewal_due',
        KeyConditionExpression: 'renew_shard = :s AND renew_at <= :until',
        ExpressionAttributeValues: { ':s': RENEW_SHARD, ':until': untilIso },
        Limit: limit,
        // The index's key of the last item of the previous page: where this one starts, even if that item has moved since.
        ...(after ? { ExclusiveStartKey: JSON.parse(after) as Record<string, unknown> } : {}),
      }),
    );
    return { due: (r.Items ?? []).map((i) => dueOf(String(i.pk))), ...(r.LastEvaluatedKey ? { next: JSON.stringify(r.LastEvaluatedKey) } : {}) };
  }

  async getRetirementSweep(sha256: string): Promise<RetirementSweep | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.tables.archive, Key: { pk: RETIREMENT + sha256 }, ConsistentRead: true }));
    const i = r.Item;
    if (!i) return undefined;
    return { sha256, v: Number(i.v), state: i.state === 'swept' ? 'swept' : 'sweeping', ...(typeof i.sweep_cursor === 'string' ? { cursor: i.sweep_cursor } : {}) };
  }

  /** advance (none|sweeping → sweeping) or finish (none|sweeping → swept), conditional on the sweep as read. */
  async moveRetirementSweep(sha256: string, read: RetirementSweep | undefined, to: { state: 'sweeping'; cursor: string } | { state: 'swept' }): Promise<boolean> {
    const t = to.state === 'swept' ? TSA_RETIREMENT_SWEEP.transitions.finish : TSA_RETIREMENT_SWEEP.transitions.advance;
    const r = await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: RETIREMENT + sha256 },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: read?.state ?? null,
      version: read?.v,
      to: t.to,
      ...(to.state === 'sweeping' ? { set: { sweep_cursor: to.cursor } } : { remove: ['sweep_cursor'] }),
    });
    return r.ok;
  }

  /** renew (stamped → stamped): conditional on the version read. */
  async appendGroupRenewal(group: ArchiveGroup, ats: Uint8Array, renewAt: string, tsaNotAfter: string): Promise<boolean> {
    const t = ARCHIVE_GROUP.transitions.renew;
    const r = await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: GROUP + group.id },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: t.from,
      version: group.v,
      to: t.to,
      set: { renewals: [...group.renewals, ats], renew_at: renewAt, tsa_not_after: tsaNotAfter },
    });
    return r.ok;
  }

  /** postpone (stamped → stamped, own → own): renew_at moves on, conditional on the version read. */
  async postponeRenewal(due: RenewalDue & { kind: 'group' | 'record' }, version: number, renewAt: string): Promise<boolean> {
    const machine = due.kind === 'group' ? ARCHIVE_GROUP : OWN_RECORD;
    const t = machine.transitions.postpone;
    const r = await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: due.kind === 'group' ? GROUP + due.id : RECORD + due.image_hash },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: t.from,
      version,
      to: t.to,
      set: { renew_at: renewAt },
    });
    return r.ok;
  }

  async getOwnRecord(imageHash: string): Promise<OwnRecord | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.tables.archive, Key: { pk: RECORD + imageHash }, ConsistentRead: true }));
    const i = r.Item;
    if (!i) return undefined;
    return { image_hash: imageHash, v: Number(i.v), record: i.record as Uint8Array, renew_at: String(i.renew_at), algorithm: hashOf(i.algorithm), tsa_not_after: String(i.tsa_not_after) };
  }

  /** rehash (none → own), renew or redo (own → own), conditional on the version read. */
  async putOwnRecord(record: OwnRecord, readVersion: number | undefined, how: 'renew' | 'redo' = 'renew'): Promise<boolean> {
    const t = readVersion === undefined ? OWN_RECORD.transitions.rehash : OWN_RECORD.transitions[how];
    const r = await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: RECORD + record.image_hash },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: t.from === 'none' ? null : t.from,
      version: readVersion,
      to: t.to,
      set: { record: record.record, renew_at: record.renew_at, algorithm: record.algorithm, tsa_not_after: record.tsa_not_after, renew_shard: RENEW_SHARD },
    });
    return r.ok;
  }

  /**
   * offer (none|offered → offered) or correct (used → used), conditional on the offer as read:
   * the latest digest, due at once. An offer used before `used_digest` was kept names it now (its
   * `digest` was the one used).
   */
  async offerDigest(offer: Pick<DigestOffer, 'image_hash' | 'algorithm' | 'digest' | 'offered_at'>, read: DigestOffer | undefined): Promise<boolean> {
    const t = read?.state === 'used' ? DIGEST_OFFER.transitions.correct : DIGEST_OFFER.transitions.offer;
    const r = await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: `${DIGEST}${offer.image_hash}#${offer.algorithm}` },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: read?.state ?? null,
      version: read?.v,
      to: t.to,
      set: {
        algorithm: offer.algorithm,
        digest: offer.digest,
        offered_at: offer.offered_at,
        renew_shard: RENEW_SHARD,
        renew_at: offer.offered_at,
        ...(read?.state === 'used' && !read.used_digest ? { used_digest: read.digest } : {}),
      },
    });
    return r.ok;
  }

  async getDigestOffer(imageHash: string, algorithm: ErsHash): Promise<DigestOffer | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.tables.archive, Key: { pk: `${DIGEST}${imageHash}#${algorithm}` }, ConsistentRead: true }));
    const i = r.Item;
    if (!i) return undefined;
    return {
      image_hash: imageHash,
      algorithm,
      digest: i.digest as Uint8Array,
      state: i.state === 'used' ? 'used' : 'offered',
      ...(typeof i.v === 'number' ? { v: i.v } : {}),
      ...(i.used_digest instanceof Uint8Array ? { used_digest: i.used_digest } : {}),
      offered_at: String(i.offered_at),
    };
  }

  /** use (offered → used) or redo (used → used): the digest as read is the one used; off the renewal index; conditional on the offer as read. */
  async markDigestUsed(offer: DigestOffer): Promise<boolean> {
    const t = offer.state === 'used' ? DIGEST_OFFER.transitions.redo : DIGEST_OFFER.transitions.use;
    const r = await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: `${DIGEST}${offer.image_hash}#${offer.algorithm}` },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: offer.state,
      version: offer.v,
      to: t.to,
      set: { used_digest: offer.digest },
      remove: ['renew_shard', 'renew_at'],
    });
    return r.ok;
  }

  /** postpone (offered → offered) or hold (used → used): due again at `renewAt`, conditional on the offer as read. */
  async postponeDigest(offer: DigestOffer, renewAt: string): Promise<void> {
    const t = offer.state === 'used' ? DIGEST_OFFER.transitions.hold : DIGEST_OFFER.transitions.postpone;
    await moveState(this.db, {
      table: this.tables.archive,
      key: { pk: `${DIGEST}${offer.image_hash}#${offer.algorithm}` },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from: offer.state,
      version: offer.v,
      to: t.to,
      set: { renew_at: renewAt },
    });
  }
}

/** The anchor_state of an anchored evidence item (EVIDENCE_ITEM's anchored sub-states share it). */
const ARCHIVE_MEMBER_ANCHORED = 'anchored';

/** What an item on the renewal_due index is, from its key. */
function dueOf(pk: string): RenewalDue {
  if (pk.startsWith(GROUP)) return { kind: 'group', id: pk.slice(GROUP.length) };
  if (pk.startsWith(DIGEST)) {
    const [imageHash = '', algorithm = ''] = pk.slice(DIGEST.length).split('#');
    return { kind: 'digest', image_hash: imageHash, algorithm: hashOf(algorithm) };
  }
  return { kind: 'record', image_hash: pk.slice(RECORD.length) };
}

function toGroup(i: Record<string, unknown>): ArchiveGroup {
  return {
    id: String(i.pk).slice(GROUP.length),
    v: Number(i.v),
    algorithm: hashOf(i.algorithm),
    size: Number(i.size),
    timeStamp: i.time_stamp as Uint8Array,
    renewals: Array.isArray(i.renewals) ? (i.renewals as Uint8Array[]) : [],
    created_at: String(i.created_at),
    renew_at: String(i.renew_at),
    tsa_not_after: String(i.tsa_not_after),
  };
}

function hashOf(value: unknown): ErsHash {
  const name = String(value);
  if (!isErsHash(name)) throw new Error(`archive: unknown hash algorithm ${name}`);
  return name;
}

function concat(list: readonly Uint8Array[]): Uint8Array {
  return Uint8Array.from(Buffer.concat(list));
}

/** A stored hash list (the group's algorithm is SHA-256: 32 bytes each) back into its hashes. */
function split32(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 32) out.push(bytes.slice(i, i + 32));
  return out;
}
