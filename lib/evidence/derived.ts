/**
 * Derived data (docs/decisions.md "Derived data"): what the service keeps about its evidence
 * items besides the items themselves, computed from the changes of the evidence table instead of
 * being written on the request path:
 * - the public statistics (GET /api/v1/stats): registrations, anchors, devices, transactions;
 * - the device-chain links' anchored mark (chains table): a link is claimed on the request path
 *   (it guards the chain against forks) and marked anchored from here once its item is anchored.
 *   Until then readers derive it from the item (proof-check.ts deriveLinkState, v1-read.ts).
 *
 * The changes come in order per item: from the table's DynamoDB Stream in AWS
 * (functions/jobs/evidence-stream.ts), from the local store's change feed with `npm start`
 * (lib/local/change-feed.ts). Delivery is at least once; applying is exactly once: each
 * statistics item records, per shard of the stream, the last change it counted
 * (lib/store/stats-counters.ts), and a link's mark is a put of the same values. So totals are
 * exact once the changes are applied; the lag is the feed's (a few seconds).
 *
 * Pure: no I/O. The adapters unmarshal the images; this module says what each change means.
 */
import type { StatsEvent } from './stats.js';
import type { ChainLink } from './records.js';

/** One change of one item of the evidence table, in stream order. */
export interface ItemChange {
  /** The item's key (image_hash attribute): a hash, `reg#…`, `standalone#…`, `blob#…`. */
  key: string;
  old?: Record<string, unknown> | undefined;
  new?: Record<string, unknown> | undefined;
  /** When the change was made (epoch ms; the stream's approximate creation time). */
  atMs: number;
  /** Its sequence number in its shard, as a fixed-width decimal string (comparable as text). */
  seq: string;
}

const HOUR_MS = 3_600_000;
const HASH = /^[0-9a-f]{64}$/;

/** Sequence numbers as fixed-width text: DynamoDB's are decimal strings of up to 40 digits. */
export function sequenceKey(sequenceNumber: string): string {
  return sequenceNumber.padStart(40, '0');
}

/**
 * What a change counts: a registration made (an account's first registration of a hash); an anchor
 * that became anchored (with its device when it is the chain's first link, and its transaction:
 * its own in direct mode, the batch's by the batch's first leaf).
 */
export function statsOf(change: ItemChange): StatsEvent | undefined {
  const hourStartMs = Math.floor(change.atMs / HOUR_MS) * HOUR_MS;
  const before = change.old;
  const after = change.new;
  if (change.key.startsWith('reg#')) {
    if (before?.registered_at === undefined && after?.registered_at !== undefined) return { seq: change.seq, hourStartMs, delta: { registered: 1 } };
    return undefined;
  }
  if (!HASH.test(change.key)) return undefined;
  if (after?.anchor_state !== 'anchored' || before?.anchor_state === 'anchored') return undefined;
  const merkle = after.merkle as { leaf_index?: unknown } | undefined;
  const transactions = merkle === undefined || Number(merkle.leaf_index) === 0 ? 1 : 0;
  return { seq: change.seq, hourStartMs, delta: { anchored: 1, devices: Number(after.chain_index) === 0 ? 1 : 0, transactions } };
}

/**
 * The chain link an anchored item completes, with the item's values (its transaction as the item
 * names it now: a fee replacement moves it), or undefined when the change leaves the link as it is.
 */
export function anchoredLinkOf(change: ItemChange): ChainLink | undefined {
  const item = change.new;
  if (!HASH.test(change.key) || item?.anchor_state !== 'anchored') return undefined;
  const before = change.old;
  if (before?.anchor_state === 'anchored' && before.tx_hash === item.tx_hash) return undefined;
  if (typeof item.public_key_hex !== 'string' || typeof item.chain_index !== 'number' || typeof item.tx_hash !== 'string') return undefined;
  return {
    public_key_hex: item.public_key_hex,
    chain_index: item.chain_index,
    image_hash: change.key,
    chain_hash: String(item.chain_hash),
    previous_hash: (item.previous_hash as string | null | undefined) ?? null,
    signature_hex: String(item.signature_hex),
    ...(typeof item.device_id === 'string' ? { device_id: item.device_id } : {}),
    state: 'anchored',
    claim_id: String(item.claim_id ?? ''),
    anchored_at: String(item.anchored_at),
    tx_hash: item.tx_hash,
  };
}

/** Where the derived data goes (lib/store: the counters and chains tables). */
export interface DerivedStores {
  /**
   * Adds the events to the statistics, exactly once per `shard` and sequence number: an event
   * the statistics already counted (a redelivery) is left out.
   */
  applyStats(shard: string, events: StatsEvent[]): Promise<void>;
  /** Writes the links as anchored (puts of the same values: idempotent). */
  putAnchoredLinks(links: ChainLink[]): Promise<void>;
}

/** Applies a batch of changes of one shard, in order. Throws when a store fails: the batch is delivered again. */
export async function applyChanges(stores: DerivedStores, shard: string, changes: ItemChange[]): Promise<{ stats: number; links: number }> {
  const events = changes.map(statsOf).filter((e): e is StatsEvent => e !== undefined);
  // One put per link: its last change in the batch wins (the stream is in order per item).
  const links = new Map<string, ChainLink>();
  for (const change of changes) {
    const link = anchoredLinkOf(change);
    if (link) links.set(`${link.public_key_hex}#${link.chain_index}`, link);
  }
  await Promise.all([links.size ? stores.putAnchoredLinks([...links.values()]) : undefined, events.length ? stores.applyStats(shard, events) : undefined]);
  return { stats: events.length, links: links.size };
}
