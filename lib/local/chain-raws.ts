import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LedgerRecords } from '../ledger/records.js';

/**
 * Every signed raw transaction of the wallet, as [hash, raw], read from the ledger records (one
 * slot per nonce, pk `tx#<address>`; see lib/ledger/records.ts) for the local chain's replay
 * (chain-history.cjs). A replaced slot contributes each of its versions, since any of them may be
 * the one a journaled block holds. Only the four attributes needed are read (a projection), in
 * nonce ranges queried side by side: at 10,000 slots the records are ~7 MB, most of it other fields.
 * Every transaction the service sends (a batch's included) must have its slot here, as the
 * sender's persist-before-broadcast rule gives it; a journaled transaction missing from these ends
 * the journal replay at its block (chain-history.cjs), and LedgerSender.replay re-sends the rest.
 */
export async function ledgerRaws(db: DynamoDBDocumentClient, table: string, address: string): Promise<[string, string][]> {
  const pk = `tx#${address.toLowerCase()}`;
  const wallet = await db.send(new GetCommand({ TableName: table, Key: { pk: `wallet#${address.toLowerCase()}`, sk: 0 }, ConsistentRead: true }));
  const nextNonce = typeof wallet.Item?.next_nonce === 'number' ? wallet.Item.next_nonce : 0;
  const RANGE = 2500;
  const ranges: [number, number][] = [];
  for (let from = 0; from < nextNonce; from += RANGE) ranges.push([from, Math.min(nextNonce, from + RANGE) - 1]);
  // Slots at or above the counter (a counter behind its records) in one open-ended query.
  const open = ranges.length * RANGE;
  const pages = await Promise.all([
    ...ranges.map(([from, to]) => query(db, table, 'pk = :pk AND sk BETWEEN :from AND :to', { ':pk': pk, ':from': from, ':to': to })),
    query(db, table, 'pk = :pk AND sk >= :from', { ':pk': pk, ':from': Math.max(open, nextNonce) }),
  ]);
  const out: [string, string][] = [];
  for (const items of pages) {
    for (const item of items) {
      if (typeof item.tx_hash === 'string' && typeof item.raw === 'string') out.push([item.tx_hash.toLowerCase(), item.raw]);
      const hashes = item.tx_hashes as string[] | undefined;
      const raws = item.raws as string[] | undefined;
      hashes?.forEach((h, i) => {
        const raw = raws?.[i];
        if (raw) out.push([h.toLowerCase(), raw]);
      });
    }
  }
  return out;
}

async function query(db: DynamoDBDocumentClient, table: string, condition: string, values: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: condition,
        ExpressionAttributeValues: values,
        ProjectionExpression: 'tx_hash, #raw, tx_hashes, raws',
        ExpressionAttributeNames: { '#raw': 'raw' },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * The wallets whose transactions the local chain holds, in the order they sent them: the one the
 * genesis funds first, then every wallet the key registry lists (rotation order), then the
 * configured one. After a wallet rotation (lib/local/wallet-rotation.ts) a wallet's first
 * transactions are paid for by its predecessor's funding, so this is also the order of a replay.
 */
export function walletsInOrder(genesis: string, registered: readonly string[], current: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const a of [genesis, ...registered, current]) {
    const lower = a.toLowerCase();
    if (!lower || seen.has(lower)) continue;
    seen.add(lower);
    out.push(lower);
  }
  // The configured wallet last: it is the newest.
  const last = current.toLowerCase();
  return last ? [...out.filter((a) => a !== last), last] : out;
}

/**
 * Re-sends the transactions of wallets the stack no longer sends from (rotated away; drained
 * before their retirement, so every slot is final) into a fresh node, raw bytes in nonce order,
 * when the block journal did not rebuild them (a journal lost). The node answers "already known"
 * or "nonce too low" for those it has: nothing to do then. Returns how many it took.
 */
export async function resendRetiredWallets(
  db: DynamoDBDocumentClient,
  table: string,
  chainId: number,
  rpc: (method: string, params: unknown[]) => Promise<unknown>,
  addresses: readonly string[],
): Promise<number> {
  const records = new LedgerRecords(db, table, chainId, () => new Date());
  let taken = 0;
  for (const address of addresses) {
    const mined = Number(BigInt((await rpc('eth_getTransactionCount', [address, 'latest'])) as string));
    const slots = (await records.listSlots(address, mined)).filter((s) => s.raw && (s.status === 'confirmed' || s.status === 'failed'));
    for (const slot of slots.sort((a, b) => a.sk - b.sk)) {
      try {
        await rpc('eth_sendRawTransaction', [slot.raw]);
        taken++;
      } catch {
        // Known already, or its nonce is taken: the chain has it.
      }
    }
  }
  return taken;
}
