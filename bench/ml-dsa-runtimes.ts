/**
 * ML-DSA-65 (pure, empty context) by implementation and runtime: liboqs WASM (@oqs/liboqs-js, the
 * local signer), @noble/post-quantum (pure TypeScript) and node:crypto (OpenSSL 3.5; only on
 * Node ≥ 24.6: Node 22 bundles OpenSSL 3.5 too and imports the key, but cannot sign or verify with it).
 *
 *   npx tsx bench/ml-dsa-runtimes.ts                         # the project's Node (node_modules/.bin/node)
 *   /tmp/nodeX/node_modules/.bin/node --import tsx bench/ml-dsa-runtimes.ts
 *                                                            # another Node: npm i --prefix /tmp/nodeX node@22
 *
 * Prints one JSON line (BENCH_MLDSA_ITERATIONS, default 1000, at least 200, each op; BENCH_MLDSA_COLD_RUNS, default 5):
 * - per operation, sequential calls on one 32-byte message per iteration (what the service signs:
 *   a server_hash): p50, p90, p99, mean in ms, after a warm-up of 50 calls;
 * - cold cost, each in a fresh process of the same Node (median of the cold runs): importing the
 *   module, making the key from the stored 32-byte seed, the first signature and the first
 *   verification. Unbundled (tsx resolves node_modules), so the import figures are the packages'
 *   own module loading; bench/cold-start.ts measures the Lambda bundles.
 * Every signature made here is verified by another implementation (cross-checks in the output).
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, randomBytes, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
// noble and liboqs are imported dynamically, so that a cold child loads only the module it measures.

const ITERATIONS = Math.max(200, Number(process.env.BENCH_MLDSA_ITERATIONS ?? 1000));
const COLD_RUNS = Number(process.env.BENCH_MLDSA_COLD_RUNS ?? 5);
const WARMUP = 50;
const SEED = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);

/** PKCS#8 of an ML-DSA-65 private key in the seed-only form (RFC 9881 §6: `seed [0] OCTET STRING (SIZE (32))`). */
const PKCS8_SEED_PREFIX = Buffer.from('3034020100300b0609608648016503040312042280' + '20', 'hex');

interface Stats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
}

function stats(ms: number[]): Stats {
  const sorted = [...ms].sort((a, b) => a - b);
  const q = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  return { n: ms.length, p50: round(q(0.5)), p90: round(q(0.9)), p99: round(q(0.99)), mean: round(ms.reduce((a, b) => a + b, 0) / ms.length) };
}

function time(fn: (i: number) => void, n: number): Stats {
  for (let i = 0; i < WARMUP; i++) fn(i);
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    fn(i);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return stats(ms);
}

/** The node:crypto private key for the seed ξ, or undefined when this Node cannot sign ML-DSA-65. */
function nodeKey(seed: Uint8Array): KeyObject | undefined {
  try {
    const key = createPrivateKey({ key: Buffer.concat([PKCS8_SEED_PREFIX, seed]), format: 'der', type: 'pkcs8' });
    nodeSign(null, Buffer.alloc(32), key); // Node 22 imports the key, then fails here
    return key;
  } catch {
    return undefined;
  }
}

// ---- cold: one fresh process per measurement --------------------------------------------------

type ColdKind = 'noble' | 'liboqs' | 'node';

/** Runs in the child: import, key from seed, first sign, first verify; prints ms as JSON. */
async function coldChild(kind: ColdKind): Promise<void> {
  const ms = (t: bigint): number => Number(process.hrtime.bigint() - t) / 1e6;
  const message = Uint8Array.from(randomBytes(32));
  const out: Record<string, number> = {};
  let t = process.hrtime.bigint();
  if (kind === 'noble') {
    const { ml_dsa65: noble } = await import('@noble/post-quantum/ml-dsa.js');
    out.import = ms(t);
    t = process.hrtime.bigint();
    const { publicKey, secretKey } = noble.keygen(Uint8Array.from(SEED));
    out.key = ms(t);
    t = process.hrtime.bigint();
    const sig = noble.sign(message, secretKey);
    out.firstSign = ms(t);
    t = process.hrtime.bigint();
    if (!noble.verify(sig, message, publicKey)) throw new Error('noble: own signature does not verify');
    out.firstVerify = ms(t);
  } else if (kind === 'liboqs') {
    const { createMLDSA65: create } = await import('@oqs/liboqs-js/sig');
    out.import = ms(t);
    t = process.hrtime.bigint();
    const oqs = await create();
    out.instantiate = ms(t);
    // The production signer takes noble's expanded key (4032 bytes): noble's keygen is measured
    // in the noble child; here it is made before the clock starts.
    const { ml_dsa65: noble } = await import('@noble/post-quantum/ml-dsa.js');
    const { publicKey, secretKey } = noble.keygen(Uint8Array.from(SEED));
    t = process.hrtime.bigint();
    const sig = oqs.sign(message, secretKey);
    out.firstSign = ms(t);
    t = process.hrtime.bigint();
    if (!oqs.verify(message, sig, publicKey)) throw new Error('liboqs: own signature does not verify');
    out.firstVerify = ms(t);
  } else {
    const crypto = await import('node:crypto');
    out.import = ms(t);
    t = process.hrtime.bigint();
    const key = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_SEED_PREFIX, SEED]), format: 'der', type: 'pkcs8' });
    const pub = crypto.createPublicKey(key);
    out.key = ms(t);
    t = process.hrtime.bigint();
    const sig = crypto.sign(null, message, key);
    out.firstSign = ms(t);
    t = process.hrtime.bigint();
    if (!crypto.verify(null, message, pub, sig)) throw new Error('node:crypto: own signature does not verify');
    out.firstVerify = ms(t);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.floor(s.length / 2)]! * 100) / 100;
}

function cold(kind: ColdKind): Record<string, number> {
  const runs: Record<string, number>[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    const line = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      env: { ...process.env, BENCH_MLDSA_COLD: kind },
      encoding: 'utf8',
    });
    runs.push(JSON.parse(line.trim().split('\n').pop()!) as Record<string, number>);
  }
  return Object.fromEntries(Object.keys(runs[0]!).map((k) => [k, median(runs.map((r) => r[k]!))]));
}

// ---- main ------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const { ml_dsa65 } = await import('@noble/post-quantum/ml-dsa.js');
  const { createMLDSA65 } = await import('@oqs/liboqs-js/sig');
  const messages = Array.from({ length: ITERATIONS + WARMUP }, () => Uint8Array.from(randomBytes(32)));
  const { publicKey, secretKey } = ml_dsa65.keygen(Uint8Array.from(SEED));
  const oqs = await createMLDSA65();
  const key = nodeKey(SEED);
  const results: Record<string, Stats> = {};
  const checks: Record<string, string> = {};

  // Signatures to verify: one per message, made by liboqs (as in production).
  const sigs = messages.map((m) => oqs.sign(m, secretKey));

  results['sign, liboqs WASM (hedged; LocalMlDsaSigner)'] = time((i) => void oqs.sign(messages[i]!, secretKey), ITERATIONS);
  results['sign, noble (hedged)'] = time((i) => void ml_dsa65.sign(messages[i]!, secretKey), Math.min(ITERATIONS, 500));
  results['verify, noble'] = time((i) => void ml_dsa65.verify(sigs[i]!, messages[i]!, publicKey), Math.min(ITERATIONS, 500));
  results['verify, liboqs WASM'] = time((i) => void oqs.verify(messages[i]!, sigs[i]!, publicKey), ITERATIONS);

  if (key !== undefined) {
    const pub = createPublicKey(key);
    const spki = pub.export({ format: 'der', type: 'spki' });
    checks['node:crypto public key from the seed = noble keygen(seed).publicKey'] = String(Buffer.from(spki.subarray(spki.length - 1952)).equals(publicKey));
    // The verifier's key, imported from the raw public key as the read path would have it (SPKI).
    const pubFromRaw = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    results['sign, node:crypto (OpenSSL 3.5, hedged)'] = time((i) => void nodeSign(null, messages[i]!, key), ITERATIONS);
    results['verify, node:crypto (KeyObject reused)'] = time((i) => void nodeVerify(null, messages[i]!, pubFromRaw, sigs[i]!), ITERATIONS);
    results['verify, node:crypto (SPKI imported per call)'] = time(
      (i) => void nodeVerify(null, messages[i]!, { key: spki, format: 'der', type: 'spki' }, sigs[i]!),
      ITERATIONS,
    );
    let ok = 0;
    let okBack = 0;
    for (let i = 0; i < 200; i++) {
      if (ml_dsa65.verify(nodeSign(null, messages[i]!, key), messages[i]!, publicKey)) ok++;
      if (nodeVerify(null, messages[i]!, pubFromRaw, sigs[i]!)) okBack++;
    }
    checks['node:crypto signatures verified by noble'] = `${ok}/200`;
    checks['liboqs signatures verified by node:crypto'] = `${okBack}/200`;
  }
  let oqsByNoble = 0;
  for (let i = 0; i < 200; i++) if (ml_dsa65.verify(sigs[i]!, messages[i]!, publicKey)) oqsByNoble++;
  checks['liboqs signatures verified by noble'] = `${oqsByNoble}/200`;
  oqs.destroy();

  const coldResults: Record<string, Record<string, number>> = { noble: cold('noble'), liboqs: cold('liboqs') };
  if (key !== undefined) coldResults['node:crypto'] = cold('node');

  process.stdout.write(
    JSON.stringify({
      node: process.version,
      openssl: process.versions.openssl,
      nodeCryptoMlDsa: key !== undefined,
      iterations: ITERATIONS,
      loadavg: { before: loadBefore.map((x) => Math.round(x * 100) / 100), after: loadavg().map((x) => Math.round(x * 100) / 100) },
      results,
      cold: coldResults,
      checks,
    }) + '\n',
  );
}

const child = process.env.BENCH_MLDSA_COLD as ColdKind | undefined;
await (child !== undefined ? coldChild(child) : main());
