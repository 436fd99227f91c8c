/**
 * Where the API process spends its CPU: summarises V8 CPU profiles written by
 * bench/servers/api.ts when BENCH_CPU_PROFILE=<dir> is set, e.g.
 *
 *   mkdir -p /tmp/prof && BENCH_CPU_PROFILE=/tmp/prof BENCH_SECTIONS=http npm run bench
 *   npx tsx bench/profile-summary.ts /tmp/prof/api-*.cpuprofile
 *
 * Prints busy time, self time by package (or repository directory), and the inclusive time of
 * the stages that matter for the anchoring and verification paths. Profiler overhead inflates
 * absolute figures; the shares are what to read.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Inclusive groups: a sample counts once per group when any frame on its stack matches. */
const GROUPS: Record<string, (frame: ProfileNode['callFrame']) => boolean> = {
  'ML-DSA-65 sign (LocalMlDsaSigner: liboqs WASM, first signature cross-checked by noble)': (f) => f.functionName === 'sign' && f.url.endsWith('crypto/ml-dsa.ts'),
  'ML-DSA-65 sign (noble: the deterministic test mode only)': (f) => f.functionName === 'sign' && f.url.includes('@noble/post-quantum'),
  'ML-DSA-65 verify (noble)': (f) => f.functionName === 'verify' && f.url.includes('@noble/post-quantum'),
  'RFC 3161 token issue (EmbeddedTsa)': (f) => f.functionName === 'sign' && f.url.endsWith('tsa/embedded.ts'),
  'RFC 3161 token verify (lib/crypto/tsa/verify.ts)': (f) => f.functionName === 'verifyTimestampResponse' && f.url.endsWith('tsa/verify.ts'),
  'ledger tx signing (ethers)': (f) => f.functionName === 'signTransaction' && f.url.includes('ethers'),
  'ledger tx sender check (Transaction.from → recoverAddress)': (f) => f.functionName === 'recoverAddress' && f.url.includes('ethers'),
  'AWS SDK (DynamoDB client: middleware, SigV4, (de)serialisation)': (f) => /node_modules\/(@smithy|@aws-sdk|@aws-crypto)\//.test(f.url),
  'ethers JSON-RPC provider': (f) => f.url.includes('ethers') && /providers?\//.test(f.url),
  'socket writes (writev)': (f) => f.functionName === 'writev',
  'scrypt (login)': (f) => f.functionName === 'scrypt',
  'Hono + zod (routing, validation)': (f) => /node_modules\/(hono|@hono|zod)\//.test(f.url),
};

for (const file of process.argv.slice(2)) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfTime = new Map<number, number>();
  p.samples.forEach((id, i) => selfTime.set(id, (selfTime.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));

  let total = 0;
  let idle = 0;
  const byPackage = new Map<string, number>();
  const groups = new Map<string, number>();
  for (const [id, t] of selfTime) {
    total += t;
    const node = byId.get(id);
    if (!node) continue;
    const { url, functionName } = node.callFrame;
    if (functionName === '(idle)') {
      idle += t;
      continue;
    }
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.includes('/bench/') || url.includes('/lib/') || url.includes('/functions/') ? url.replace(/^.*\/(bench|lib|functions)\//, '$1/').split('/').slice(0, 2).join('/') : url.startsWith('node:') ? 'node internals' : functionName || '(native)');
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + t);
    const matched = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)?.callFrame;
      if (!frame) break;
      for (const [group, test] of Object.entries(GROUPS)) if (!matched.has(group) && test(frame)) matched.add(group);
    }
    for (const group of matched) groups.set(group, (groups.get(group) ?? 0) + t);
  }
  const ms = (us: number) => (us / 1000).toFixed(0).padStart(7);
  const share = (us: number) => `${((100 * us) / (total - idle)).toFixed(1).padStart(5)} %`;
  process.stdout.write(`${file}\n  profiled ${ms(total)} ms, busy ${ms(total - idle)} ms\n  self time by package:\n`);
  for (const [k, t] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 20)) process.stdout.write(`  ${ms(t)} ms ${share(t)}  ${k}\n`);
  process.stdout.write('  inclusive, by stage:\n');
  for (const [k, t] of [...groups].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${ms(t)} ms ${share(t)}  ${k}\n`);
}
