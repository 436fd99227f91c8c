import { forbiddenError } from '../errors.js';

/**
 * The tiers of api-v2.md ("Tier"), their limits and the features each includes. The configuration
 * (lib/config.ts) reads TIER_LIMITS over {@link DEFAULT_TIERS}; lib/deps hands the resulting table
 * to the services that need it.
 */

export type TierName = 'free' | 'starter' | 'pro' | 'enterprise';
/** Ordered: each tier includes everything of the tiers before it. */
export const TIER_NAMES: readonly TierName[] = ['free', 'starter', 'pro', 'enterprise'];

export type Feature = 'hash' | 'verify' | 'timestamp' | 'ed25519_signing' | 'pdf_certificate' | 'anchor' | 'full';

export interface TierLimits {
  monthly_quota: number;
  rate_per_minute: number;
  price_eur_per_month: number;
}

export type TierTable = Readonly<Record<TierName, TierLimits>>;

/** The tier table of api-v2.md ("Tier"); TIER_LIMITS overrides any part of it. */
export const DEFAULT_TIERS: TierTable = {
  free: { monthly_quota: 50, rate_per_minute: 10, price_eur_per_month: 0 },
  starter: { monthly_quota: 500, rate_per_minute: 60, price_eur_per_month: 29 },
  pro: { monthly_quota: 2000, rate_per_minute: 200, price_eur_per_month: 99 },
  enterprise: { monthly_quota: 5000, rate_per_minute: 500, price_eur_per_month: 299 },
};

/**
 * The lowest tier that includes each feature (api-v2.md "Limits", decisions.md "Limits"): hash and
 * verify on all tiers; Ed25519 signing, the stand-alone RFC 3161 timestamp (v1 /timestamp) and
 * PDF certificates from Starter; ledger anchoring and the full pipeline (v1 /chain/anchor too) from Pro.
 */
export const FEATURE_MIN_TIER: Readonly<Record<Feature, TierName>> = Object.freeze({
  hash: 'free',
  verify: 'free',
  timestamp: 'starter',
  ed25519_signing: 'starter',
  pdf_certificate: 'starter',
  anchor: 'pro',
  full: 'pro',
});

const TIER_LABEL: Readonly<Record<TierName, string>> = { free: 'Free', starter: 'Starter', pro: 'Pro', enterprise: 'Enterprise' };

/** True for a known tier name. */
export function isTierName(value: unknown): value is TierName {
  return typeof value === 'string' && (TIER_NAMES as readonly string[]).includes(value);
}

/** The display name of a tier ("Pro"). */
export function tierLabel(tier: TierName): string {
  return TIER_LABEL[tier];
}

/** True when `tier` includes `feature` (tiers are ordered: each includes everything below it). */
export function tierAllows(tier: TierName, feature: Feature): boolean {
  return TIER_NAMES.indexOf(tier) >= TIER_NAMES.indexOf(FEATURE_MIN_TIER[feature]);
}

/** Every feature `tier` includes, in a stable order (each has its endpoint: /account/info names only what works). */
export function featuresOf(tier: TierName): Feature[] {
  return (Object.keys(FEATURE_MIN_TIER) as Feature[]).filter((f) => tierAllows(tier, f));
}

/** The limits of `tier` from the configured table (api-v2.md figures, overridable by TIER_LIMITS). */
export function limitsOf(tiers: TierTable, tier: TierName): TierLimits {
  return tiers[tier];
}

/** Throws 403 `tier_insufficient` naming the tier needed, when `tier` lacks `feature`. */
export function assertFeature(tier: TierName, feature: Feature): void {
  if (tierAllows(tier, feature)) return;
  const required = FEATURE_MIN_TIER[feature];
  throw forbiddenError(
    'tier_insufficient',
    `The feature "${feature}" needs the ${tierLabel(required)} tier or higher; this account is on the ${tierLabel(tier)} tier.`,
    { required_tier: required, current_tier: tier, feature },
  );
}
