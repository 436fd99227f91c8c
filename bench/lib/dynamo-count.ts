/**
 * A counting proxy in front of dynalite: every DynamoDB request the service sends passes through
 * it and is counted by operation and by table, with the capacity units DynamoDB would bill for it.
 *
 * How: the proxy adds `ReturnConsumedCapacity: "TOTAL"` to each request (dynalite computes the
 * units from the item sizes as DynamoDB does: a write costs 1 WCU per started KB of the larger of
 * the old and the new item, a strongly consistent read 1 RCU per started 4 KB) and reads
 * `ConsumedCapacity` from the answer before passing it on unchanged. Dynalite checks the shape of
 * the SigV4 header, not the signature, so changing the body is invisible to both sides. The table
 * name loses its stack prefix (`bench-1a2b3c-evidence` → `evidence`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What one operation of one table cost. */
export interface OpCount {
  requests: number;
  /** Capacity units DynamoDB would bill (WCU for writes, RCU for reads). */
  units: number;
  /** Request bodies' bytes (what the SDK sent; an UpdateItem's bytes are its expression, not the item). */
  bytes: number;
}

/** Counts keyed `<table> <Operation>`. */
export type Counts = Record<string, OpCount>;

export const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
/**
 * The local change feed's own operations (lib/local/dynalite-store.mjs): the local stand-in for
 * reading the evidence table's DynamoDB Stream, which in AWS is Lambda's poller (no charge for a
 * Lambda trigger, no table request). Counted apart, never as DynamoDB requests.
 */
export const FEED_OPS = new Set(['ReadChanges', 'TrimChanges']);

export interface CountingProxy {
  endpoint: string;
  /** A copy of the counts so far. */
  snapshot(): Counts;
  stop(): Promise<void>;
}

/** Counts in `after` minus those in `before`. */
export function diffCounts(before: Counts, after: Counts): Counts {
  const out: Counts = {};
  for (const [key, a] of Object.entries(after)) {
    const b = before[key] ?? { requests: 0, units: 0, bytes: 0 };
    const d = { requests: a.requests - b.requests, units: a.units - b.units, bytes: a.bytes - b.bytes };
    if (d.requests > 0) out[key] = d;
  }
  return out;
}

/** Totals of a set of counts: all requests, writes, write units, and requests by operation and table. */
export function summarise(counts: Counts): {
  requests: number;
  writes: number;
  writeUnits: number;
  readUnits: number;
  byOperation: Record<string, number>;
  writesByTable: Record<string, number>;
  writeUnitsByTable: Record<string, number>;
  /** Reads and trims of the local change feed (FEED_OPS), not in `requests`. */
  feedRequests: number;
} {
  const s = { requests: 0, writes: 0, writeUnits: 0, readUnits: 0, byOperation: {} as Record<string, number>, writesByTable: {} as Record<string, number>, writeUnitsByTable: {} as Record<string, number>, feedRequests: 0 };
  for (const [key, c] of Object.entries(counts)) {
    const [table = '?', op = '?'] = key.split(' ');
    if (FEED_OPS.has(op)) {
      s.feedRequests += c.requests;
      continue;
    }
    s.requests += c.requests;
    s.byOperation[op] = (s.byOperation[op] ?? 0) + c.requests;
    if (WRITE_OPS.has(op)) {
      s.writes += c.requests;
      s.writeUnits += c.units;
      s.writesByTable[table] = (s.writesByTable[table] ?? 0) + c.requests;
      s.writeUnitsByTable[table] = (s.writeUnitsByTable[table] ?? 0) + c.units;
    } else s.readUnits += c.units;
  }
  return s;
}

/** What a request does, in a few words (its key, expression or index), for the trace. */
function describe(body: Buffer): string {
  try {
    const j = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const key = j.Key ? Object.values(j.Key as Record<string, Record<string, string>>).map((v) => String(Object.values(v)[0]).slice(0, 24)).join('/') : '';
    const what = (j.UpdateExpression ?? j.KeyConditionExpression ?? j.ConditionExpression ?? j.FilterExpression ?? '') as string;
    return `${j.IndexName ? `[${String(j.IndexName)}] ` : ''}${key} ${what.slice(0, 90)}`.trim();
  } catch {
    return '';
  }
}

const tableOf = (name: unknown): string => (typeof name === 'string' ? name.replace(/^bench-[0-9a-f]+-/, '') : '?');

/** Starts the proxy on a free port of 127.0.0.1, forwarding to `target` (dynalite's endpoint). */
export async function startCountingProxy(target: string, trace?: (line: string) => void): Promise<CountingProxy> {
  const upstream = new URL(target);
  const counts: Counts = {};
  const add = (key: string, units: number, bytes: number) => {
    const c = (counts[key] ??= { requests: 0, units: 0, bytes: 0 });
    c.requests++;
    c.units += units;
    c.bytes += bytes;
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '?';
      let body = Buffer.concat(chunks);
      const sentBytes = body.length;
      let tables: string[] = ['?'];
      try {
        const json = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
        if (typeof json.TableName === 'string') tables = [tableOf(json.TableName)];
        else if (json.RequestItems && typeof json.RequestItems === 'object') tables = Object.keys(json.RequestItems).map(tableOf);
        if (op !== 'CreateTable' && op !== 'DescribeTable' && op !== 'ListTables' && op !== 'UpdateTimeToLive' && op !== 'DescribeTimeToLive') {
          json.ReturnConsumedCapacity = 'TOTAL';
          body = Buffer.from(JSON.stringify(json));
        }
      } catch {
        // Not JSON: forwarded as it is (dynalite answers the error).
      }
      const headers = { ...req.headers, 'content-length': String(body.length), host: upstream.host };
      const out = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers, agent }, (up) => {
        const parts: Buffer[] = [];
        up.on('data', (c: Buffer) => parts.push(c));
        up.on('end', () => {
          const answer = Buffer.concat(parts);
          let units = 0;
          try {
            const parsed = JSON.parse(answer.toString('utf8')) as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] };
            const cc = parsed.ConsumedCapacity;
            units = Array.isArray(cc) ? cc.reduce((s, c) => s + (c.CapacityUnits ?? 0), 0) : (cc?.CapacityUnits ?? 0);
          } catch {
            // an error answer
          }
          for (const t of tables) add(`${t} ${op}`, units / tables.length, sentBytes / tables.length);
          if (trace) trace(`${tables.join(',')} ${op} ${describe(body)} → ${up.statusCode} ${units} units`);
          res.writeHead(up.statusCode ?? 500, up.headers);
          res.end(answer);
        });
        up.on('error', () => res.destroy());
      });
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    snapshot: () => structuredClone(counts),
    stop: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
