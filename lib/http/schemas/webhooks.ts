import { z } from '@hono/zod-openapi';
import { WEBHOOK_EVENT_TYPES } from '../../webhooks/records.js';
import { IsoTime } from './accounts.js';

/**
 * Schemas of the webhook endpoints (docs/webhooks.md): they validate the requests and are what
 * /api/openapi.json documents. Requests are strict objects: unknown fields → 400.
 */
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES).openapi({ example: 'evidence.anchored' });

export const CreateWebhookRequest = z
  .strictObject({
    url: z.string().min(1).max(2048).openapi({
      example: 'https://claims.example.com/hooks/evidence',
      description:
        'Where the events are POSTed. Deployed stages take only https URLs whose host resolves to public unicast addresses only; `npm start` also takes http://127.0.0.1 (WEBHOOK_ALLOW_PRIVATE_TARGETS). A refused URL → 400 `webhook_url_refused`.',
    }),
    events: z.array(z.string().max(64)).min(1).max(10).openapi({ example: ['evidence.anchored', 'evidence.final', 'evidence.record'], description: 'One or more of evidence.anchored, evidence.final, evidence.record (else 400 `invalid_events`).' }),
  })
  .openapi('CreateWebhookRequest');

export const WebhookEndpoint = z
  .object({
    webhook_id: z.string().openapi({ example: 'wh_4kQ2xY7pL0mN3bV8cZ1d' }),
    url: z.string(),
    events: z.array(WebhookEventType),
    status: z.enum(['active', 'disabled']),
    disabled_reason: z.enum(['gone', 'failing']).nullable().openapi({ description: '`gone`: the receiver answered 410 Gone; `failing`: every attempt failed for 5 days.' }),
    disabled_at: IsoTime.nullable(),
    created_at: IsoTime,
  })
  .openapi('WebhookEndpoint');

export const NewWebhookEndpoint = WebhookEndpoint.extend({
  secret: z.string().openapi({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret (`whsec_` + base64 of 32 random bytes), shown only in this answer. Give it to any Standard Webhooks library to verify the `webhook-signature` header.',
  }),
}).openapi('NewWebhookEndpoint');

export const WebhookIdParam = z.object({
  webhook_id: z.string().min(1).max(64).openapi({ param: { name: 'webhook_id', in: 'path' }, example: 'wh_4kQ2xY7pL0mN3bV8cZ1d' }),
});

export const DeliveryIdParam = WebhookIdParam.extend({
  delivery_id: z.string().min(1).max(128).openapi({ param: { name: 'delivery_id', in: 'path' }, example: 'dlv_20261129101530123_3f1c…' }),
});

export const WebhookDelivery = z
  .object({
    delivery_id: z.string(),
    event_id: z.string().openapi({ description: 'The `webhook-id` header: the same on every attempt; receivers deduplicate by it.' }),
    event_type: WebhookEventType,
    created_at: IsoTime,
    state: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.array(z.object({ at: IsoTime, status: z.number().int().openapi({ description: 'The HTTP status answered; 0 when none came.' }), error: z.string().optional() })),
    next_attempt_at: IsoTime.nullable(),
    failed_reason: z.string().nullable(),
  })
  .openapi('WebhookDelivery');
