/**
 * Registration's answer time for a new address (200) and a taken one (409), through a running
 * `npm start` (decisions.md "Accounts": both hash the password). The two kinds alternate, N of
 * each, so that the shared machine's load falls on both alike; prints the medians.
 *
 *   PUBLIC_RATE_PER_MINUTE=100000 PORT=5200 DYNAMODB_PORT=5201 LEDGER_RPC_PORT=5202 DATA_DIR=/tmp/d npm start &
 *   BASE=http://127.0.0.1:5200 npx tsx bench/register-timing.ts
 *
 * Environment: BASE (default http://127.0.0.1:3000), REGISTER_N (default 20). Register attempts
 * are limited per client address (PUBLIC_RATE_PER_MINUTE / 20 a minute): raise it for the run.
 */
const base = process.env.BASE ?? 'http://127.0.0.1:3000';
const n = Number(process.env.REGISTER_N ?? 20);

async function register(email: string, password: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${base}/api/v2/account/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  await res.text();
  return { status: res.status, ms: performance.now() - t0 };
}

function summary(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const median = ((s[(s.length - 1) >> 1] ?? 0) + (s[s.length >> 1] ?? 0)) / 2;
  return `median ${median.toFixed(1)} ms (min ${(s[0] ?? 0).toFixed(1)}, max ${(s.at(-1) ?? 0).toFixed(1)}, n ${s.length})`;
}

const run = `${Date.now()}-${process.pid}`;
const taken = `taken-${run}@example.com`;
const first = await register(taken, 'a long enough password');
if (first.status !== 200) throw new Error(`registering ${taken} answered ${first.status}`);
const fresh: number[] = [];
const again: number[] = [];
for (let i = 0; i < n; i++) {
  const a = await register(`new-${run}-${i}@example.com`, 'a long enough password');
  const b = await register(taken, 'another long enough password');
  if (a.status !== 200 || b.status !== 409) throw new Error(`expected 200 and 409, got ${a.status} and ${b.status}`);
  fresh.push(a.ms);
  again.push(b.ms);
}
console.log(`new address   (200): ${summary(fresh)}`);
console.log(`taken address (409): ${summary(again)}`);
