/**
 * What the crash harness reads back to judge a run (crash-judge.ts), through public interfaces
 * and independent reads: the API (verify, receipt, usage, statistics, a device's chain), the local
 * chain's JSON-RPC (ethers) and the batches table (the AWS SDK). Nothing of the service's code.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AttributeValue, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { JsonRpcProvider, Network } from 'ethers';
import type { Problem } from './crash-report.js';
import type { Service } from './crash-service.js';

// ─── public reads ───────────────────────────────────────────────────────────────────────────────

export interface VerifyResult {
  status: number;
  verified: boolean;
  registered_at?: string;
  chain_index?: number;
  ledger_tx?: string;
}

export interface Receipt {
  image_hash: string;
  ledger?: { tx_hash?: string; merkle?: { root?: string } };
  device?: { public_key_hex?: string; chain_index?: number };
}

export function parseProblem(text: string): Problem {
  try {
    return JSON.parse(text) as Problem;
  } catch {
    return {};
  }
}

/** A GET or POST that retries network errors and 5xx (a public read during a restart) for up to 60 s. */
export async function fetchRetry(url: string, init: RequestInit = {}, deadlineMs = 60_000): Promise<{ status: number; text: string }> {
  const end = Date.now() + deadlineMs;
  let last = '';
  for (;;) {
    try {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
      const text = await res.text();
      if (res.status < 500 || Date.now() > end) return { status: res.status, text };
      last = `${res.status} ${text.slice(0, 200)}`;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > end) throw new Error(`${url}: ${last}`);
    await sleep(250);
  }
}

export async function verifyHash(service: Service, h: string): Promise<VerifyResult> {
  const res = await fetchRetry(`${service.base}/api/v2/evidence/verify/${h}`, {}, 10_000);
  const body = parseProblem(res.text) as Partial<VerifyResult>;
  return { ...body, status: res.status, verified: res.status === 200 && body.verified === true };
}

export interface StatTotals {
  registered: number;
  anchored: number;
  devices: number;
  transactions: number;
}

/** The all-time totals of GET /api/v1/stats, in a fixed key order. */
export async function readStats(service: Service): Promise<StatTotals> {
  const res = await fetchRetry(`${service.base}/api/v1/stats`, {}, 10_000);
  if (res.status !== 200) throw new Error(`stats: ${res.status} ${res.text.slice(0, 200)}`);
  const t = (JSON.parse(res.text) as { totals?: Partial<StatTotals> }).totals ?? {};
  return { registered: Number(t.registered ?? 0), anchored: Number(t.anchored ?? 0), devices: Number(t.devices ?? 0), transactions: Number(t.transactions ?? 0) };
}

/** A fresh account through the public register endpoint, upgraded to Pro with the admin token. */
export async function setUpAccount(service: Service): Promise<{ accountId: string; apiKey: string; email: string; password: string; token: string }> {
  const email = `crash-${randomBytes(6).toString('hex')}@example.test`;
  const password = 'correct horse battery staple';
  const reg = await fetchRetry(`${service.base}/api/v2/account/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (reg.status !== 200) throw new Error(`register: ${reg.status} ${reg.text}`);
  const body = JSON.parse(reg.text) as { account_id: string; api_key: string; token: string };
  const tier = await fetchRetry(`${service.base}/api/v2/admin/accounts/${body.account_id}/tier`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${service.adminToken}` },
    body: JSON.stringify({ tier: 'pro' }),
  });
  if (tier.status !== 200) throw new Error(`set tier: ${tier.status} ${tier.text}`);
  return { accountId: body.account_id, apiKey: body.api_key, email, password, token: body.token };
}

export async function readUsed(service: Service, account: { email: string; password: string; token: string }): Promise<number> {
  let res = await fetchRetry(`${service.base}/api/v2/account/usage`, { headers: { authorization: `Bearer ${account.token}` } }, 10_000);
  if (res.status === 401) {
    const login = await fetchRetry(`${service.base}/api/v2/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: account.email, password: account.password }),
    });
    account.token = (JSON.parse(login.text) as { token: string }).token;
    res = await fetchRetry(`${service.base}/api/v2/account/usage`, { headers: { authorization: `Bearer ${account.token}` } }, 10_000);
  }
  if (res.status !== 200) throw new Error(`usage: ${res.status} ${res.text}`);
  return (JSON.parse(res.text) as { used: number }).used;
}

export interface ChainRead {
  verdict: string;
  detail: string;
  entries: { chain_index: number; image_hash: string; state: string }[];
}

export async function readChain(service: Service, publicKeyHex: string): Promise<ChainRead | undefined> {
  const entries: ChainRead['entries'] = [];
  const verdicts: string[] = [];
  const details: string[] = [];
  let cursor: string | null = null;
  do {
    const url = `${service.base}/api/v1/chain/all/${publicKeyHex}?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetchRetry(url);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`chain/all: ${res.status} ${res.text.slice(0, 200)}`);
    const page = JSON.parse(res.text) as {
      entries: ChainRead['entries'];
      next_cursor: string | null;
      integrity: { verdict: string; gaps: unknown[]; broken_links: unknown[] };
    };
    entries.push(...page.entries);
    verdicts.push(page.integrity.verdict);
    if (page.integrity.verdict !== 'complete') details.push(JSON.stringify({ gaps: page.integrity.gaps, broken_links: page.integrity.broken_links }));
    cursor = page.next_cursor;
  } while (cursor);
  return { verdict: verdicts.every((v) => v === 'complete') ? 'complete' : (verdicts.find((v) => v !== 'complete') ?? '?'), detail: details.join('; '), entries };
}

/** What the chain holds of the service's evidence, read block by block over JSON-RPC. */
export interface LedgerRead {
  /** Direct anchors: transaction → the image hash it carries. */
  txs: Map<string, string>;
  /** Batches: transaction → the Merkle root it carries. */
  batchTxs: Map<string, string>;
  /** Image hash → every transaction that carries it, directly or in a batch whose sealed leaves hold it. */
  byImageHash: Map<string, string[]>;
  /** Merkle root → every transaction that carries it. */
  byRoot: Map<string, string[]>;
  anchorTxCount: number;
}

const BATCH_PREFIX_HEX = Buffer.from('MERKLE-SHA256:', 'ascii').toString('hex');

/**
 * Every anchor transaction of the local chain (direct: image_hash || server_hash; batched:
 * "MERKLE-SHA256:" || root), with the image hashes of each batch from `sealed` (root → image
 * hashes, as the batches table stores them: see readSeals).
 */
export async function readLedger(rpcUrl: string, sealed: Map<string, string[]> = new Map()): Promise<LedgerRead> {
  const provider = new JsonRpcProvider(rpcUrl, Network.from(31337), { staticNetwork: true });
  try {
    const latest = await provider.getBlockNumber();
    const txs = new Map<string, string>();
    const batchTxs = new Map<string, string>();
    const byImageHash = new Map<string, string[]>();
    const byRoot = new Map<string, string[]>();
    const add = (m: Map<string, string[]>, k: string, v: string) => m.set(k, [...(m.get(k) ?? []), v]);
    const numbers = Array.from({ length: latest + 1 }, (_, i) => i);
    await pool(numbers, 8, async (n) => {
      const block = await provider.getBlock(n, true);
      if (!block) throw new Error(`block ${n} missing`);
      for (const tx of block.prefetchedTransactions) {
        const data = tx.data.toLowerCase().slice(2);
        const hash = tx.hash.toLowerCase();
        if (data.length === 128) {
          // image_hash (32 bytes) || server_hash (32 bytes)
          txs.set(hash, data.slice(0, 64));
          add(byImageHash, data.slice(0, 64), hash);
        } else if (data.length === BATCH_PREFIX_HEX.length + 64 && data.startsWith(BATCH_PREFIX_HEX)) {
          const root = data.slice(BATCH_PREFIX_HEX.length);
          batchTxs.set(hash, root);
          add(byRoot, root, hash);
        }
      }
    });
    for (const [root, list] of byRoot) for (const h of sealed.get(root) ?? []) for (const tx of list) add(byImageHash, h, tx);
    return { txs, batchTxs, byImageHash, byRoot, anchorTxCount: txs.size + batchTxs.size };
  } finally {
    provider.destroy();
  }
}

/**
 * The sealed batches, root → image hashes, read straight from the local DynamoDB (the batches
 * table's seal items: `images` is the leaves' image hashes, 32 bytes each) with the plain SDK, as an
 * operator would dump the table: the only record of which hashes a batch root covers.
 */
export async function readSeals(endpoint: string, table = 'evidence-local-batches'): Promise<Map<string, string[]>> {
  const db = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 3 });
  const out = new Map<string, string[]>();
  try {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await db.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }));
      for (const item of page.Items ?? []) {
        const root = item.root?.S;
        const images = item.images?.B;
        if (item.sk?.S !== 'seal' || !root || !images) continue;
        const list = Array.from({ length: images.length / 32 }, (_, i) => Buffer.from(images.subarray(i * 32, i * 32 + 32)).toString('hex'));
        out.set(root, [...(out.get(root) ?? []), ...list]);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  } finally {
    db.destroy();
  }
}

export async function pool<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await run(item);
      }
    }),
  );
}
