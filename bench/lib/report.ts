/**
 * Markdown tables from the benchmark's JSON results (bench/results/latest.json → latest.md), in
 * the form BENCHMARKS.md quotes them. Re-render a saved result: `npx tsx bench/lib/report.ts <json>`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LoadResult } from '../load.js';

export interface HttpRun extends LoadResult {
  /** Which stack and variant: e.g. "automine", "2 s blocks", "automine + edge cache". */
  setup: string;
  endpoint: string;
  /** The bare server's run at the same connection count, for the ratio. */
  bareRps?: number;
  /** CPU milliseconds per completed request, by process, and the machine's cores kept busy (of 2). */
  cpuMsPerRequest?: { server: number; dynalite: number; chain: number; loadGen: number; utilisation: number; others: number };
  /** The machine's 1-minute load average when the run ended (others' work shows here). */
  loadavg1?: number;
}

export interface StageRow {
  stage: string;
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  /** Operations per second of one caller (1000 / mean). */
  opsPerSec: number;
  note?: string;
}

export interface StagesResult {
  rows: StageRow[];
  checks: Record<string, string>;
  pipeline: {
    /** What was measured (runs saved before the label existed have none: see pipelineLabels). */
    label?: string;
    runs: number;
    totalP50: number;
    totalMean: number;
    stageSumMean: number;
    coveredMean: number;
    overheadMean: number;
    overheadShare: number;
    perStageMean: Record<string, number>;
    perStageCount: Record<string, number>;
  }[];
  concurrency: Record<string, number | string>[];
}

export interface ColdRow {
  name: string;
  file: string;
  bundleBytes: number;
  /** Fresh process: the external AWS SDK packages the bundle imports, then the bundle. */
  importMsMedian: number;
  /** The bundle alone (SDK already loaded). */
  bundleImportMsMedian: number;
  sdkImportMsMedian: number;
  importMsAll: number[];
  heavy: Record<string, number>;
  verdict: string;
}

const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '–');
const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '–');
const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toString() : '–');

export function httpTable(runs: HttpRun[]): string {
  const lines = [
    '| Endpoint | Setup | Conns | req/s (2xx) | p50 ms | p90 ms | p99 ms | non-2xx / errors | vs bare | CPU ms/req: server · dynalite · chain · load gen | cores: ours · others |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|',
  ];
  for (const r of runs) {
    const ratio = r.bareRps ? `${((100 * r.okPerSec) / r.bareRps).toFixed(1)} %` : '–';
    const c = r.cpuMsPerRequest;
    const cpu = c ? `${f2(c.server)} · ${f2(c.dynalite)} · ${f2(c.chain)} · ${f2(c.loadGen)}` : '–';
    lines.push(
      `| ${r.endpoint} | ${r.setup} | ${r.connections} | ${r.okPerSec < 10 ? f1(r.okPerSec) : f0(r.okPerSec)} | ${f0(r.latencyMs.p50)} | ${f0(r.latencyMs.p90)} | ${f0(r.latencyMs.p99)} | ${r.non2xx} / ${r.errors + r.timeouts} | ${ratio} | ${cpu} | ${c ? `${f2(c.utilisation)} · ${f2(c.others)}` : '–'} |`,
    );
  }
  return lines.join('\n');
}

export function stagesTable(s: StagesResult): string {
  const lines = ['| Stage | n | p50 ms | p90 ms | p99 ms | mean ms | ops/s (1 caller) | Note |', '|---|---:|---:|---:|---:|---:|---:|---|'];
  for (const r of s.rows) {
    lines.push(`| ${r.stage} | ${r.n} | ${f2(r.p50)} | ${f2(r.p90)} | ${f2(r.p99)} | ${f2(r.mean)} | ${f0(r.opsPerSec)} | ${r.note ?? ''} |`);
  }
  return lines.join('\n');
}

export function pipelineTable(s: StagesResult, labels: string[]): string {
  const lines = [
    '| Pipeline (in-process, sequential) | runs | total p50 ms | total mean ms | Σ stages mean ms | covered by stages ms | overhead ms | overhead % |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  s.pipeline.forEach((p, i) => {
    lines.push(
      `| ${labels[i] ?? `run ${i}`} | ${p.runs} | ${f1(p.totalP50)} | ${f1(p.totalMean)} | ${f1(p.stageSumMean)} | ${f1(p.coveredMean)} | ${f1(p.overheadMean)} | ${(100 * p.overheadShare).toFixed(0)} % |`,
    );
  });
  return lines.join('\n');
}

export function pipelineStagesTable(s: StagesResult, labels: string[]): string {
  const stages = [...new Set(s.pipeline.flatMap((p) => Object.keys(p.perStageMean)))];
  const lines = [`| Stage inside the pipeline (mean ms per anchor) | ${labels.join(' | ')} |`, `|---|${labels.map(() => '---:').join('|')}|`];
  for (const st of stages) {
    lines.push(`| ${st} | ${s.pipeline.map((p) => (p.perStageMean[st] === undefined ? '–' : `${f2(p.perStageMean[st] ?? 0)} (×${f1(p.perStageCount[st] ?? 0)})`)).join(' | ')} |`);
  }
  return lines.join('\n');
}

export function coldTable(rows: ColdRow[]): string {
  const heavyNames = ['ethers', 'pkijs', '@noble/post-quantum', 'jose', 'hono', 'zod'];
  const lines = [
    `| Function | Bundle KB | import ms total (SDK + bundle) | of which bundle | ${heavyNames.map((h) => `${h} KB`).join(' | ')} | Check |`,
    `|---|---:|---:|---:|${heavyNames.map(() => '---:').join('|')}|---|`,
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${(r.bundleBytes / 1024).toFixed(0)} | ${f0(r.importMsMedian)} | ${f0(r.bundleImportMsMedian)} | ${heavyNames.map((h) => (r.heavy[h] ? (r.heavy[h] / 1024).toFixed(0) : '·')).join(' | ')} | ${r.verdict} |`,
    );
  }
  return lines.join('\n');
}

/** The pipelines' labels; runs saved before they carried one measured these three, in this order. */
function pipelineLabels(s: StagesResult): string[] {
  const before = ['production (noble signer)', 'liboqs signer', 'liboqs + pipelined sender'];
  return s.pipeline.map((p, i) => p.label ?? before[i] ?? `run ${i}`);
}

/** One mode of the issue 18 section (bench/run.ts). */
export interface Issue18Row {
  mode: 'direct' | 'batched';
  batchWindowMs: number;
  /** 0: automine. */
  blockTimeMs?: number;
  anchorsPerSec: number;
  anchorP50Ms: number;
  anchorP99Ms: number;
  /** Distinct tx_hash in the measured run's answers. */
  transactions: number;
  anchorsPerTx: number;
  /** Σ gasUsed / Σ anchors over the receipts of those transactions. */
  gasPerAnchor: number;
  usdPer1000Anchors: number;
  /** Direct stack only: hash registration p50 with 10 clients, verify/s with 20 clients. */
  hashP50Ms10?: number;
  verifyPerSec20?: number;
}

function issue18Table(rows: Issue18Row[], settings: Record<string, unknown>): string {
  const f = (v: number | undefined, d = 0) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));
  return [
    `Cost assumes ${String(settings.gasPriceGwei)} gwei and POL at ${String(settings.polUsd)} USD (BENCH_GAS_PRICE_GWEI, BENCH_POL_USD). Goals: batched ≥ 150 anchors/s and ≥ 1.5× direct, ≥ 8 anchors per transaction, batched p50 < 800 ms with automine and p99 < 3 s with 2 s blocks, hash p50 < 15 ms (10 clients), verify ≥ 2,000/s (20 clients).`,
    '',
    '| mode | blocks | LEDGER_BATCH_WINDOW_MS | anchors/s (16 clients) | p50 ms | p99 ms | transactions | anchors per tx | gas per anchor | USD per 1,000 anchors | hash p50 ms (10 clients) | verify/s (20 clients) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.mode} | ${r.blockTimeMs ? `${r.blockTimeMs / 1000} s` : 'automine'} | ${r.batchWindowMs} | ${f(r.anchorsPerSec, 1)} | ${f(r.anchorP50Ms)} | ${f(r.anchorP99Ms)} | ${r.transactions} | ${f(r.anchorsPerTx, 2)} | ${f(r.gasPerAnchor)} | ${f(r.usdPer1000Anchors, 4)} | ${f(r.hashP50Ms10)} | ${f(r.verifyPerSec20)} |`,
    ),
  ].join('\n');
}

/** One operation's DynamoDB cost (bench/requests.ts). */
export interface RequestRow {
  operation: string;
  clients: number;
  count: number;
  requestsEach: number;
  writesEach: number;
  writeUnitsEach: number;
  readUnitsEach: number;
  byOperationEach: Record<string, number>;
  writesByTableEach: Record<string, number>;
  writeUnitsByTableEach: Record<string, number>;
  p50Ms: number;
  /** CPU of the API process and the ledger node per operation (ms). */
  serviceCpuMsEach: number;
  /** Wall time of the whole measurement (ms): the batch against one by one (issue 36). */
  wallMs?: number;
  /** Operations per request (a batch anchor's entries); `count` and the per-operation figures are per entry. */
  perRequest?: number;
}

export interface BackgroundRow {
  what: string;
  items: number;
  seconds: number;
  requestsPerMinute: number;
  readUnitsPerMinute: number;
  byOperationPerMinute: Record<string, number>;
}

export interface RequestsResult {
  rows: RequestRow[];
  background: BackgroundRow[];
}

/** DynamoDB requests per operation (bench/requests.ts), with the cost of 1,000 of each at on-demand prices. */
export function requestsTable(r: RequestsResult, settings: Record<string, unknown>): string {
  const wru = Number(settings.ddbWriteUsdPerMillion ?? 0.625);
  const rru = Number(settings.ddbReadUsdPerMillion ?? 0.125);
  const fmt = (o: Record<string, number>) => Object.entries(o).map(([k, v]) => `${k} ${v}`).join(', ');
  const rows = r.rows.map((x) => {
    const usd = ((x.writeUnitsEach * wru + x.readUnitsEach * rru) * 1000) / 1e6;
    return `| ${x.operation} | ${x.clients} | ${x.count} | **${x.requestsEach}** (${fmt(x.byOperationEach)}) | **${x.writesEach}** (${fmt(x.writesByTableEach)}) | ${x.writeUnitsEach} (${fmt(x.writeUnitsByTableEach)}) | ${x.readUnitsEach} | $${usd.toFixed(4)} | ${x.p50Ms} | ${x.serviceCpuMsEach} |`;
  });
  const idle = r.background.map((b) => `| ${b.what} | ${b.items} | ${b.seconds} | **${b.requestsPerMinute}** (${fmt(b.byOperationPerMinute)}) | ${b.readUnitsPerMinute} |`);
  return [
    '| operation | clients | n | requests each (by operation) | writes each (by table) | WCU each (by table) | RCU each | DynamoDB $ per 1,000 | p50 ms | service CPU ms each |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Prices: $${wru} per million write units, $${rru} per million read units (on demand). Service CPU: the API process and the ledger node.`,
    '',
    '| background (idle) | items in the tables | seconds | requests a minute (by operation) | RCU a minute |',
    '|---|---|---|---|---|',
    ...idle,
  ].join('\n');
}

/** Everything run.ts writes to latest.md. */
/** bench/request-path.ts: issue 33's goals measured in one run. */
export interface RequestPathResult {
  counts: { operation: string; clients: number; count: number; requestsEach: number; writesEach: number; writesByTableEach: Record<string, number>; p50Ms: number; apiCpuMsEach: number }[];
  latency: { registrationP50Ms: number; verifyP50Ms: number; ratio: number; verifyAnchoredP50Ms: number };
  throughput: { batched?: RequestPathThroughput; direct?: RequestPathThroughput; ratio: number };
  proofsCpuMsPerAnchor: number;
  machine: { nproc: number; loadavg: number[] };
}
export interface RequestPathThroughput {
  mode: string;
  clients: number;
  anchorsPerSecond: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  apiCpuMsPerAnchor: number;
  ledgerCpuMsPerAnchor: number;
  dynaliteAndClientsCpuMsPerAnchor: number;
  machineCpuMsPerAnchor: number;
}

function requestPathTables(r: RequestPathResult): string {
  const row = (op: string, clients: number) => r.counts.find((c) => c.operation === op && c.clients === clients);
  const f = (x: number | undefined, d = 2) => (x === undefined || Number.isNaN(x) ? 'n/a' : String(Math.round(x * 10 ** d) / 10 ** d));
  const met = (ok: boolean) => (ok ? 'met' : '**not met**');
  const reg1 = row('hash registration', 1);
  const reg10 = row('hash registration', 10);
  const a1 = row('anchor (batched)', 1);
  const a16 = row('anchor (batched)', 16);
  const { batched: b, direct: d } = r.throughput;
  const goals = [
    '| what | measured | goal | |',
    '|---|---|---|---|',
    `| DynamoDB requests per hash registration, 1 / 10 clients | ${f(reg1?.requestsEach)} / ${f(reg10?.requestsEach)} | ≤ 3 | ${met((reg1?.requestsEach ?? 99) <= 3 && (reg10?.requestsEach ?? 99) <= 3)} |`,
    `| hash registration p50 against a public verify of a registered hash p50, 10 clients each | ${f(r.latency.registrationP50Ms, 0)} ms against ${f(r.latency.verifyP50Ms, 0)} ms (${f(r.latency.ratio)}×) | ≤ 3× | ${met(r.latency.ratio <= 3)} |`,
    `| DynamoDB requests per anchor, batched, 16 clients / 1 client | ${f(a16?.requestsEach)} / ${f(a1?.requestsEach)} | ≤ 8 / ≤ 12 | ${met((a16?.requestsEach ?? 99) <= 8 && (a1?.requestsEach ?? 99) <= 12)} |`,
    `| ${b?.clients ?? 128} clients: batched against direct anchors/s | ${f(b?.anchorsPerSecond, 1)} against ${f(d?.anchorsPerSecond, 1)} (${f(r.throughput.ratio)}×), errors ${b?.errors ?? 'n/a'} / ${d?.errors ?? 'n/a'}, p99 ${f(b?.p99Ms, 0)} / ${f(d?.p99Ms, 0)} ms | ≥ 3×, no errors | ${met(r.throughput.ratio >= 3 && b?.errors === 0 && d?.errors === 0)} |`,
    `| API CPU per hash registration (10 clients) / per anchor (batched, ${b?.clients ?? 128} clients), the proofs' share | ${f(reg10?.apiCpuMsEach)} ms / ${f(b?.apiCpuMsPerAnchor)} ms, of which the proofs ${f(r.proofsCpuMsPerAnchor)} ms | reported | |`,
  ];
  const counts = [
    '| operation | clients | n | requests each | writes each | writes by table | p50 ms | API CPU ms each |',
    '|---|---|---|---|---|---|---|---|',
    ...r.counts.map((c) => `| ${c.operation} | ${c.clients} | ${c.count} | ${f(c.requestsEach)} | ${f(c.writesEach)} | ${Object.entries(c.writesByTableEach).map(([t, n]) => `${t} ${f(n)}`).join(', ')} | ${f(c.p50Ms, 0)} | ${f(c.apiCpuMsEach)} |`),
  ];
  const cpu = [
    '| mode | anchors/s | p50 ms | p99 ms | errors | CPU per anchor: API | Hardhat | dynalite and clients | the machine, all processes |',
    '|---|---|---|---|---|---|---|---|---|',
    ...[b, d].filter((t): t is RequestPathThroughput => t !== undefined).map((t) => `| ${t.mode} | ${f(t.anchorsPerSecond, 1)} | ${f(t.p50Ms, 0)} | ${f(t.p99Ms, 0)} | ${t.errors} | ${f(t.apiCpuMsPerAnchor)} | ${f(t.ledgerCpuMsPerAnchor)} | ${f(t.dynaliteAndClientsCpuMsPerAnchor)} | ${f(t.machineCpuMsPerAnchor)} |`),
  ];
  return [...goals, '', ...counts, '', ...cpu, '', `A first verify of an anchored record: p50 ${f(r.latency.verifyAnchoredP50Ms, 0)} ms. Load average at the end: ${JSON.stringify(r.machine.loadavg)}.`].join('\n');
}

export interface BenchResults {
  settings: Record<string, unknown>;
  machine: Record<string, unknown>;
  http: HttpRun[];
  requestPath?: RequestPathResult;
  issue18?: Issue18Row[];
  requests?: RequestsResult;
  stages?: StagesResult;
  cold?: ColdRow[];
}

export function renderMarkdown(results: BenchResults): string {
  const m = results.machine;
  const md: string[] = [
    `# Benchmark results (${String(m.startedAt)})`,
    '',
    `Machine: ${String(m.nproc)} × ${String(m.cpu)}, ${String(m.memoryGiB)} GiB, Node ${String(m.node)}, ${String(m.platform)}.`,
    `Load average before/after: ${JSON.stringify(m.loadavgBefore)} / ${JSON.stringify(m.loadavgAfter)}; wall time ${String(m.wallSeconds)} s.`,
    `Settings: ${JSON.stringify(results.settings)}.`,
    '',
  ];
  if (results.http.length) md.push('## HTTP (autocannon, separate process)', '', httpTable(results.http), '');
  if (results.issue18?.length) md.push('## Issue 18 goals, side by side', '', issue18Table(results.issue18, results.settings), '');
  if (results.requestPath) md.push('## The request path (issue 33: bench/request-path.ts)', '', requestPathTables(results.requestPath), '');
  if (results.requests) md.push('## DynamoDB requests per operation (npm start behind a counting proxy)', '', requestsTable(results.requests, results.settings), '');
  const s = results.stages;
  if (s) {
    md.push('## Stages (in-process)', '', stagesTable(s), '');
    const labels = pipelineLabels(s);
    md.push(pipelineTable(s, labels), '', pipelineStagesTable(s, labels), '');
    md.push('Checks:', '', ...Object.entries(s.checks).map(([k, v]) => `- ${k}: ${v}`), '');
    if (s.concurrency.length) {
      const keys = Object.keys(s.concurrency[0] ?? {});
      md.push(`| ${keys.join(' | ')} |`, `|${keys.map(() => '---').join('|')}|`, ...s.concurrency.map((r) => `| ${keys.map((k) => String(r[k])).join(' | ')} |`), '');
    }
  }
  if (results.cold) md.push('## Cold start (esbuild bundle, import in a fresh Node process)', '', coldTable(results.cold), '');
  return md.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of process.argv.slice(2)) process.stdout.write(`${renderMarkdown(JSON.parse(readFileSync(file, 'utf8')) as BenchResults)}\n`);
}
