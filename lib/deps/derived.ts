import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type DerivedStores, type ItemChange, sequenceKey } from '../evidence/derived.js';
import { ChainTable } from '../store/chain-table.js';
import { getConfig, getDb } from './core.js';
import { getStats } from './evidence.js';
import { lazy } from './lazy.js';

/**
 * The derived data's part of the composition root (lib/evidence/derived.ts): where the statistics
 * and the links' anchored marks go, and how a stream record becomes an item change. Used by the
 * evidence-stream Lambda (functions/jobs/evidence-stream.ts) and by `npm start`'s change feed
 * (lib/local/change-feed.ts).
 */
export const getDerivedStores: () => DerivedStores = /* @__PURE__ */ lazy(() => {
  const chains = new ChainTable(getDb(), getConfig().tables.chains);
  const stats = getStats();
  return { applyStats: (shard, events) => stats.applyStats(shard, events), putAnchoredLinks: (links) => chains.putAnchoredLinks(links) };
});

/** A DynamoDB stream record (the Lambda event's shape, which the local feed serves too). */
export interface StreamRecord {
  eventName?: string;
  dynamodb?: {
    ApproximateCreationDateTime?: number;
    Keys?: Record<string, AttributeValue>;
    NewImage?: Record<string, AttributeValue>;
    OldImage?: Record<string, AttributeValue>;
    SequenceNumber?: string;
  };
}

/** The change a stream record of the evidence table describes. */
export function itemChangeOf(record: StreamRecord): ItemChange {
  const d = record.dynamodb ?? {};
  const keys = d.Keys ? unmarshall(d.Keys) : {};
  return {
    key: String(keys.image_hash ?? ''),
    old: d.OldImage ? unmarshall(d.OldImage) : undefined,
    new: d.NewImage ? unmarshall(d.NewImage) : undefined,
    atMs: Math.round((d.ApproximateCreationDateTime ?? Date.now() / 1000) * 1000),
    seq: sequenceKey(d.SequenceNumber ?? '0'),
  };
}
