import type { TierLimits, TierName, TierTable } from '../accounts/tiers.js';
import { DEFAULT_TIERS, TIER_NAMES } from '../accounts/tiers.js';

/** The environment as loadConfig reads it: every value a string, or absent. */
export type Env = Readonly<Record<string, string | undefined>>;

/** TIER_LIMITS: a JSON object of tier overrides, merged over the document tier table (one problem per bad entry). */
export function parseTierLimits(raw: string | undefined, problems: string[]): TierTable {
  if (raw === undefined) return DEFAULT_TIERS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('TIER_LIMITS is not valid JSON');
    return DEFAULT_TIERS;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push('TIER_LIMITS must be a JSON object keyed by tier');
    return DEFAULT_TIERS;
  }
  const out: Record<TierName, TierLimits> = { ...DEFAULT_TIERS };
  for (const [tier, value] of Object.entries(parsed)) {
    if (!TIER_NAMES.includes(tier as TierName)) {
      problems.push(`TIER_LIMITS names an unknown tier "${tier}" (known: ${TIER_NAMES.join(', ')})`);
      continue;
    }
    if (typeof value !== 'object' || value === null) {
      problems.push(`TIER_LIMITS.${tier} must be an object`);
      continue;
    }
    const merged = { ...out[tier as TierName] };
    for (const [field, n] of Object.entries(value as Record<string, unknown>)) {
      if (!(field in merged)) {
        problems.push(`TIER_LIMITS.${tier}.${field} is not a known limit (monthly_quota, rate_per_minute, price_eur_per_month)`);
      } else if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
        problems.push(`TIER_LIMITS.${tier}.${field} must be a non-negative integer`);
      } else {
        merged[field as keyof TierLimits] = n;
      }
    }
    out[tier as TierName] = merged;
  }
  return out;
}

/**
 * Small typed reader that records one problem per bad variable instead of throwing at the first
 * (why this and not a schema: lib/config.ts, at its top).
 */
export class Reader {
  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  optional(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  list(name: string, item: RegExp, what: string): string[] {
    const v = this.optional(name);
    if (v === undefined) return [];
    const items = v.split(',').map((s) => s.trim()).filter(Boolean);
    for (const i of items) if (!item.test(i)) this.problems.push(`${name}: "${i}" is not ${what}`);
    return items.filter((i) => item.test(i));
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.optional(name);
    if (v === undefined) return fallback;
    if ((allowed as readonly string[]).includes(v)) return v as T;
    this.problems.push(`${name} must be one of ${allowed.join(', ')}, got "${v}"`);
    return fallback;
  }

  integer(name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const v = this.optional(name);
    if (v === undefined) return fallback;
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max || !Number.isSafeInteger(Number(v))) {
      this.problems.push(`${name} must be an integer ≥ ${min}${max < Number.MAX_SAFE_INTEGER ? ` and ≤ ${max}` : ''}, got "${v}"`);
      return fallback;
    }
    return Number(v);
  }

  number(name: string, fallback: number, min: number): number {
    const v = this.optional(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) {
      this.problems.push(`${name} must be a number ≥ ${min}, got "${v}"`);
      return fallback;
    }
    return n;
  }

  bigint(name: string, fallback: bigint): bigint {
    const v = this.optional(name);
    if (v === undefined) return fallback;
    if (!/^\d+$/.test(v)) {
      this.problems.push(`${name} must be a non-negative integer (wei), got "${v}"`);
      return fallback;
    }
    return BigInt(v);
  }

  port(name: string, fallback: number): number {
    const v = this.optional(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < 1 || n > 65535) {
      this.problems.push(`${name} must be a TCP port (1-65535), got "${v}"`);
      return fallback;
    }
    return n;
  }

  optionalUrl(name: string): string | undefined {
    const v = this.optional(name);
    if (v === undefined) return undefined;
    try {
      const u = new URL(v);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
      return v;
    } catch {
      this.problems.push(`${name} must be an http(s) URL, got "${v}"`);
      return undefined;
    }
  }

  url(name: string, fallback: string): string {
    return this.optionalUrl(name) ?? fallback;
  }
}
