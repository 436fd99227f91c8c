import { randomBytes } from 'node:crypto';
import { createAccountDeps, type AccountDeps, type AccountDepsProvider } from '../../lib/deps/accounts.js';
import type { Clock } from '../../lib/accounts/clock.js';
import { createScryptHasher, type PasswordHasher } from '../../lib/accounts/passwords.js';
import type { Feature, TierLimits, TierName } from '../../lib/accounts/tiers.js';
import type { Config } from '../../lib/config.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { badRequest } from '../../lib/http/errors.js';

/**
 * Helpers shared by the accounts tests. Call them after `useStack()` (they read getConfig()/getDb()).
 */

/** scrypt with N = 2^10: for tests that hash many passwords (production cost is tested on its own). */
export const fastHasher: PasswordHasher = createScryptHasher({ log2N: 10, r: 8, p: 1 });

/** Options of {@link testDeps}. */
export interface TestDepsOptions {
  clock?: Clock;
  passwords?: PasswordHasher;
  /** Partial tier overrides, like TIER_LIMITS. */
  tiers?: Partial<Record<TierName, Partial<TierLimits>>>;
  config?: Partial<Config>;
}

/** Dependencies over the test stack, with the fast hasher unless told otherwise. */
export function testDeps(options: TestDepsOptions = {}): AccountDeps {
  const base = getConfig();
  const tiers = { ...base.tiers };
  for (const [tier, limits] of Object.entries(options.tiers ?? {})) {
    tiers[tier as TierName] = { ...tiers[tier as TierName], ...limits };
  }
  const config: Config = { ...base, ...options.config, tiers };
  return createAccountDeps({
    config,
    db: getDb(),
    passwords: options.passwords ?? fastHasher,
    ...(options.clock ? { clock: options.clock } : {}),
  });
}

/** {@link testDeps} as the provider the apps and middleware take. */
export function provider(deps: AccountDeps): AccountDepsProvider {
  return () => deps;
}

/** What {@link withAccountDeps} needs of a function's app: Hono's `request`, which takes the bindings third. */
interface RequestableApp {
  request(input: string | Request | URL, init?: RequestInit, env?: Record<string, unknown>): Response | Promise<Response>;
}

/**
 * A function's own `app` (functions/v2/account-*.ts) with the test's account dependencies: given
 * per request as the binding `deps`, which the app's deps middleware lays over the module's own
 * (lib/http/app.ts, the handler shape).
 */
export function withAccountDeps(app: RequestableApp, deps: AccountDeps) {
  const bindings = { deps: { accounts: provider(deps) } };
  return {
    request: (input: string | Request | URL, init?: RequestInit, env?: Record<string, unknown>) => app.request(input, init, { ...env, ...bindings }),
    fetch: (request: Request) => app.request(request, undefined, bindings),
  };
}

/** A fresh e-mail address. */
export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(5).toString('hex')}@example.com`;
}

/** A password that satisfies the length rule. */
export const PASSWORD = 'correct horse battery staple';

/** A frozen clock that tests can move. */
export function frozenClock(iso: string): Clock & { set(iso: string): void; advance(ms: number): void } {
  let now = new Date(iso).getTime();
  const clock = (() => new Date(now)) as Clock & { set(iso: string): void; advance(ms: number): void };
  clock.set = (next) => {
    now = new Date(next).getTime();
  };
  clock.advance = (ms) => {
    now += ms;
  };
  return clock;
}

/** JSON request init. */
export function post(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** `Authorization: Bearer <token>`. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Registers an account through the domain (fast) and returns the registration. */
export async function registerDirect(deps: AccountDeps, email = uniqueEmail()) {
  return deps.accounts.register({ email, password: PASSWORD });
}

/** The response body as an object. */
export async function body(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

/** A Hono env that makes a request come from a random client address (app.request's third argument). */
export function fromRandomIp(): { incoming: { socket: { remoteAddress: string } } } {
  const [a, b, c] = randomBytes(3);
  return { incoming: { socket: { remoteAddress: `10.${a}.${b}.${c}` } } };
}

/**
 * A test-only stand-in for an evidence function: `apiKeyAuth({ feature, charge: 'quota' })`, as the
 * evidence functions use it (rate and quota together), in front of `POST /op` (succeeds),
 * `POST /fail` (answers 400) and `POST /boom` (throws).
 */
export function evidenceTestApp(deps: AccountDeps, feature: Feature = 'hash') {
  const app = createApp();
  app.use('*', apiKeyAuth({ feature, charge: 'quota', deps: provider(deps) }));
  app.post('/op', (c) => c.json({ ok: true, account_id: c.var.caller?.accountId, tier: c.var.caller?.tier, key_id: c.var.caller?.keyId }));
  app.post('/fail', () => {
    throw badRequest('invalid_request', 'The downstream handler refused the request.');
  });
  app.post('/boom', () => {
    throw new Error('downstream failure');
  });
  return app;
}

/** `X-API-Key: <key>` as a POST init. */
export function withKey(apiKey: string): RequestInit {
  return { method: 'POST', headers: { 'x-api-key': apiKey } };
}
