import { z } from '@hono/zod-openapi';
import { TIER_NAMES } from '../../accounts/tiers.js';
import { MIN_PASSWORD_LENGTH } from '../../accounts/passwords.js';
import { FEATURE_MIN_TIER } from '../../accounts/tiers.js';

/**
 * Request and response schemas of the account endpoints (decisions.md "Accounts"): they validate at
 * the edge and produce the OpenAPI document. Requests are strict objects: unknown fields → 400.
 */

export const Email = z
  .email({ message: 'must be an e-mail address' })
  .max(254)
  .openapi({ example: 'alice@example.com', description: 'Compared and stored in lower case.' });

/** The length rule is the domain's (400 `password_too_short`); the schema bounds the size only. */
export const Password = z
  .string()
  .max(1024)
  .openapi({ minLength: MIN_PASSWORD_LENGTH, example: 'correct horse battery staple', description: `At least ${MIN_PASSWORD_LENGTH} characters.` });

export const Label = z.string().trim().min(1).max(100);

export const Tier = z.enum(TIER_NAMES as [string, ...string[]]).openapi({ example: 'free' });

export const FeatureName = z.enum(Object.keys(FEATURE_MIN_TIER) as [string, ...string[]]);

export const IsoTime = z.string().openapi({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' });

export const ApiKeyValue = z
  .string()
  .openapi({ example: 'eas_3xQ0aZk9Lm2Pq8Rt5Vw7Yb1Cd4Ef6Gh0Ab12Cd', description: 'Shown once; the service keeps only its SHA-256.' });

export const TokenFields = {
  token: z.string().openapi({ description: 'JWT (HS256) for the account endpoints: Authorization: Bearer <token>.' }),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int().openapi({ description: 'Seconds until the token expires.', example: 3600 }),
};

export const TierLimitsSchema = z
  .object({ monthly_quota: z.number().int(), rate_per_minute: z.number().int(), price_eur_per_month: z.number() })
  .openapi('TierLimits');

export const ApiKeyRecordSchema = z
  .object({
    key_id: z.string(),
    name: z.string().nullable(),
    prefix: z.string().openapi({ description: 'The first characters of the key, to recognise it.', example: 'eas_3xQ0aZk9' }),
    active: z.boolean(),
    created_at: IsoTime,
    last_used_at: IsoTime.nullable().openapi({ description: 'Recorded at most about once a minute.' }),
    deactivated_at: IsoTime.nullable(),
  })
  .openapi('ApiKeyRecord');
