/**
 * Measured alternatives to the production code, applied inside a benchmark process only (the
 * API child with BENCH_VARIANTS, or bench/stages.ts). Each one stands for a concrete change
 * recommended in BENCHMARKS.md; none of them is used by the service itself.
 *
 * - `liboqs-signer`: ML-DSA-65 signing by liboqs (C compiled to WASM, @oqs/liboqs-js) with the
 *   secret key noble derives from the same seed ξ; the public key, key id and every signature
 *   stay verifiable by verifyMlDsa65 (bench/stages.ts checks that, NIST key-gen and sig-gen keys
 *   included). Recommended change: LocalMlDsaSigner.sign → liboqs.
 * - `tier-on-key`: the API key lookup answers the tier itself, as if the key item carried the
 *   account's tier (copied by register, key creation and set-tier): authentication is one
 *   consistent GetItem instead of two sequential ones. Emulated by remembering each account's
 *   tier after its first read.
 * - `parallel-limits`: the per-minute rate ADD and the monthly quota ADD are sent together
 *   (Promise.all) right after the key lookup instead of one after the other. Emulated by starting
 *   the quota reservation inside consumeRate and handing the same promise to reserveQuota.
 * - `pipelined-sender`: LedgerSender.submit/waitForReceipt replaced by the prototype of
 *   bench/lib/pipelined-sender.ts (same records; only the broadcast is serial).
 * - `edge-cache`: a shared HTTP cache in front of the API that honours the Cache-Control the
 *   functions already send (`public, max-age=…` on verify), as CloudFront in front of API Gateway
 *   would; applied by bench/servers/api.ts around the whole API.
 */
import { createMLDSA65, type MLDSA65 } from '@oqs/liboqs-js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import type { TierName } from '../lib/config.js';
import type { AccountRepository } from '../lib/accounts/account-repository.js';
import { hashApiKey, isWellFormedApiKey } from '../lib/accounts/api-key-format.js';
import type { ApiKeyRecord, ApiKeyRepository } from '../lib/accounts/api-key-repository.js';
import { type AuthenticatedKey, ApiKeyService } from '../lib/accounts/api-keys.js';
import { LimitService, type QuotaReservation, type RateDecision } from '../lib/accounts/limits.js';
import { LedgerSender } from '../lib/ledger/sender.js';
import { LocalMlDsaSigner, mlDsaKeyId, mlDsaPublicKeyFingerprint } from '../lib/crypto/ml-dsa.js';
import type { PqSigner } from '../lib/crypto/ports.js';
import { PipelinedSenderPrototype } from './lib/pipelined-sender.js';

export const VARIANTS = ['liboqs-signer', 'tier-on-key', 'parallel-limits', 'pipelined-sender', 'edge-cache'] as const;
export type Variant = (typeof VARIANTS)[number];

/** ML-DSA-65 signer: key pair from the seed by noble (FIPS 204 KeyGen_internal), signing by liboqs. */
export class LiboqsMlDsaSigner implements PqSigner {
  readonly algorithm = 'ML-DSA-65' as const;
  readonly keyId: string;
  readonly fingerprint: string;
  readonly #publicKey: Uint8Array;
  readonly #secretKey: Uint8Array;
  readonly #oqs: MLDSA65;

  constructor(oqs: MLDSA65, seed: Uint8Array) {
    const { publicKey, secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    this.#oqs = oqs;
    this.#publicKey = publicKey;
    this.#secretKey = secretKey;
    this.fingerprint = mlDsaPublicKeyFingerprint(publicKey);
    this.keyId = mlDsaKeyId(publicKey);
  }

  static async create(seed: Uint8Array): Promise<LiboqsMlDsaSigner> {
    return new LiboqsMlDsaSigner(await createMLDSA65(), seed);
  }

  publicKey(): Promise<Uint8Array> {
    return Promise.resolve(Uint8Array.from(this.#publicKey));
  }

  /** Pure ML-DSA-65, empty context, hedged (liboqs's default randomised signing); liboqs wants plain Uint8Arrays. */
  async sign(message: Uint8Array): Promise<Uint8Array> {
    return this.#oqs.sign(Uint8Array.from(message), this.#secretKey);
  }
}

export async function applyVariants(names: string[]): Promise<Variant[]> {
  const applied: Variant[] = [];
  for (const name of names) {
    if (!(VARIANTS as readonly string[]).includes(name)) throw new Error(`unknown variant "${name}" (known: ${VARIANTS.join(', ')})`);
    const variant = name as Variant;
    if (variant === 'liboqs-signer') {
      const oqs = await createMLDSA65();
      LocalMlDsaSigner.fromSeed = ((seed: Uint8Array) => new LiboqsMlDsaSigner(oqs, seed)) as unknown as typeof LocalMlDsaSigner.fromSeed;
    } else if (variant === 'tier-on-key') {
      const tiers = new Map<string, TierName>();
      ApiKeyService.prototype.authenticate = async function (this: ApiKeyService, apiKey: string): Promise<AuthenticatedKey | undefined> {
        const self = this as unknown as { keys: ApiKeyRepository; accounts: AccountRepository; recordUse(key: ApiKeyRecord): Promise<void> };
        if (!isWellFormedApiKey(apiKey)) return undefined;
        const key = await self.keys.getByHash(hashApiKey(apiKey));
        if (!key || key.active !== true) return undefined;
        let tier = tiers.get(key.account_id); // stands for key.tier
        const [account] = await Promise.all([tier ? undefined : self.accounts.get(key.account_id), self.recordUse(key)]);
        if (!tier) {
          if (!account) return undefined;
          tier = account.tier;
          tiers.set(key.account_id, tier);
        }
        return { accountId: key.account_id, keyId: key.key_id, tier };
      };
    } else if (variant === 'pipelined-sender') {
      const prototypes = new WeakMap<LedgerSender, PipelinedSenderPrototype>();
      const of = (sender: LedgerSender) => {
        let p = prototypes.get(sender);
        if (!p) {
          const o = sender as unknown as ConstructorParameters<typeof PipelinedSenderPrototype>[0];
          p = new PipelinedSenderPrototype({ provider: o.provider, signer: o.signer, db: o.db, table: o.table, chainId: o.chainId, pollingIntervalMs: o.pollingIntervalMs });
          prototypes.set(sender, p);
        }
        return p;
      };
      LedgerSender.prototype.submit = async function (this: LedgerSender, data: string | Uint8Array, meta: { kind: string; ref: string }) {
        const bytes = typeof data === 'string' ? Buffer.from(data.replace(/^0x/, ''), 'hex') : data;
        const r = await of(this).submit(bytes, { kind: 'anchor', ref: meta.ref });
        return { ...r, from: '', broadcast: 'accepted' as const, reusedNonce: false };
      } as typeof LedgerSender.prototype.submit;
      type Receipt = Awaited<ReturnType<LedgerSender['waitForReceipt']>>;
      LedgerSender.prototype.waitForReceipt = async function (this: LedgerSender, txHash: string, timeoutMs: number): Promise<Receipt> {
        const r = await of(this).waitForReceipt(txHash.toLowerCase(), timeoutMs);
        return r ? ({ ...r, blockHash: '', gasUsed: 0n, txHash: txHash.toLowerCase() } as Receipt) : null;
      };
    } else if (variant === 'edge-cache') {
      // Applied around the API by bench/servers/api.ts (edgeCache below).
    } else {
      const consumeRate = LimitService.prototype.consumeRate;
      const reserveQuota = LimitService.prototype.reserveQuota;
      const started = new Map<string, Promise<QuotaReservation>[]>();
      LimitService.prototype.consumeRate = function (this: LimitService, accountId: string, tier: TierName): Promise<RateDecision> {
        const quota = reserveQuota.call(this, accountId, tier);
        quota.catch(() => undefined);
        const queue = started.get(accountId) ?? [];
        queue.push(quota);
        started.set(accountId, queue);
        return consumeRate.call(this, accountId, tier);
      };
      LimitService.prototype.reserveQuota = function (this: LimitService, accountId: string, tier: TierName): Promise<QuotaReservation> {
        return started.get(accountId)?.shift() ?? reserveQuota.call(this, accountId, tier);
      };
    }
    applied.push(variant);
  }
  return applied;
}

/**
 * A shared HTTP cache in front of `fetch`: GET responses carrying `Cache-Control: public,
 * max-age=N` are kept N seconds per URL and served without reaching the API (no function, no
 * rate counter), as an edge cache would.
 */
export function edgeCache(fetch: (request: Request) => Response | Promise<Response>): (request: Request) => Promise<Response> {
  // Text bodies and plain header records: @hono/node-server writes such a Response without streaming it.
  const entries = new Map<string, { expires: number; status: number; headers: Record<string, string>; body: string }>();
  return async (request) => {
    if (request.method !== 'GET') return fetch(request);
    const hit = entries.get(request.url);
    if (hit && hit.expires > Date.now()) return new Response(hit.body, { status: hit.status, headers: hit.headers });
    const response = await fetch(request);
    const m = /(?:^|,)\s*public\s*,.*max-age=(\d+)|max-age=(\d+).*,\s*public/.exec(response.headers.get('cache-control') ?? '');
    const maxAge = Number(m?.[1] ?? m?.[2] ?? 0);
    if (!maxAge) return response;
    const body = await response.text();
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    entries.set(request.url, { expires: Date.now() + maxAge * 1000, status: response.status, headers: { ...headers, 'x-cache': 'hit' }, body });
    return new Response(body, { status: response.status, headers });
  };
}
