/**
 * The webhook events of the evidence table's changes (docs/webhooks.md "Events"): the same changes
 * the statistics are derived from (lib/evidence/derived.ts), in AWS from the table's stream
 * (functions/jobs/webhook-outbox.ts), with `npm start` from the local change feed.
 *
 * An event is a transition of one evidence item, read from the change's old and new image:
 * - `evidence.anchored`: the item became anchored (the write that lets the anchor answer 200);
 * - `evidence.final`: the item's final ledger receipt was recorded (`ledger_final` appeared);
 * - `evidence.record`: the hash joined its first RFC 4998 archive group (`ers_group` appeared),
 *   so its evidence record can be served.
 * Each happens once per hash, so the event id is derived from the account, the type and the hash:
 * a change delivered twice gives the same event, and the outbox writes its deliveries once
 * (receivers deduplicate by `webhook-id` all the same: delivery is at least once).
 *
 * Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { ItemChange } from '../evidence/derived.js';
import type { WebhookEvent, WebhookEventType } from './records.js';

const HASH = /^[0-9a-f]{64}$/;

/** Where the events' links point: the service's public base URL (PUBLIC_BASE_URL) and the explorer's transaction URL template. */
export interface EventLinks {
  publicBaseUrl: string;
  /** With `{tx_hash}` (LEDGER_EXPLORER_TX_URL). */
  explorerTxUrl: string;
}

/** The id of the event `type` of `imageHash` anchored by `accountId`: `msg_` + 32 hex digits. */
export function eventId(accountId: string, type: WebhookEventType, imageHash: string): string {
  return `msg_${createHash('sha256').update(`${accountId}\n${type}\n${imageHash}`).digest('hex').slice(0, 32)}`;
}

/** The events one change of the evidence table makes true (none for most changes). */
export function webhookEventsOf(change: ItemChange, links: EventLinks): WebhookEvent[] {
  const after = change.new;
  const before = change.old;
  if (!HASH.test(change.key) || after?.anchor_state !== 'anchored' || typeof after.account_id !== 'string') return [];
  const accountId = after.account_id;
  const imageHash = change.key;
  const base = links.publicBaseUrl;
  const urls = {
    verify_url: `${base}/api/v2/evidence/verify/${imageHash}`,
    receipt_url: `${base}/api/v2/evidence/receipt/${imageHash}`,
  };
  const event = (type: WebhookEventType, timestamp: string, data: Record<string, unknown>): WebhookEvent => ({
    id: eventId(accountId, type, imageHash),
    account_id: accountId,
    type,
    timestamp,
    data: { image_hash: imageHash, ...data },
  });
  const events: WebhookEvent[] = [];
  const txHash = typeof after.tx_hash === 'string' ? after.tx_hash : undefined;
  if (before?.anchor_state !== 'anchored') {
    const merkle = after.merkle as { root?: unknown } | undefined;
    events.push(
      event('evidence.anchored', String(after.anchored_at), {
        server_hash: after.server_hash,
        anchored_at: after.anchored_at,
        tx_hash: txHash ?? null,
        ledger_chain_id: after.ledger_chain_id ?? null,
        ...(typeof merkle?.root === 'string' ? { merkle_root: merkle.root } : {}),
        ledgerscan_url: txHash ? links.explorerTxUrl.replace('{tx_hash}', txHash) : null,
        ...urls,
      }),
    );
  }
  const final = after.ledger_final as { block_number?: unknown; confirmations?: unknown; block_time?: unknown; recorded_at?: unknown; tx_hash?: unknown } | undefined;
  if (final && !before?.ledger_final) {
    events.push(
      event('evidence.final', String(final.recorded_at ?? new Date(change.atMs).toISOString()), {
        tx_hash: final.tx_hash ?? txHash ?? null,
        block_number: final.block_number,
        block_time: final.block_time,
        confirmations: final.confirmations,
        ...urls,
      }),
    );
  }
  if (after.ers_group !== undefined && before?.ers_group === undefined) {
    events.push(event('evidence.record', new Date(change.atMs).toISOString(), { evidence_record_url: `${base}/api/v2/evidence/evidence-record/${imageHash}`, ...urls }));
  }
  return events;
}
