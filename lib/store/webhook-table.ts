import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AccountEndpoints, Delivery, WebhookEndpoint, WebhookStore } from '../webhooks/records.js';
import { isConditionalCheckFailed } from './dynamo.js';

/**
 * The webhooks table (infra/tables.json) behind the domain's WebhookStore port
 * (lib/webhooks/records.ts):
 * - `pk = acct#<account>`, `sk = endpoints`: the account's endpoints in one item (`endpoints`, `v`);
 * - `pk = wh#<webhook_id>`, `sk = dlv#<delivery_id>`: a delivery (its id begins with its time, so
 *   a query of the endpoint's partition backwards is its newest deliveries). While pending it
 *   carries `due_shard` and `next_attempt_at`, the sparse index `due` the worker reads; it expires
 *   (TTL `expires_at`) 30 days after it was made.
 * Every write is conditional on the version read (`v`), or on the item being absent.
 */
const DUE_SHARD = 'due';
const KEEP_SECONDS = 30 * 24 * 3600;

export class WebhookTable implements WebhookStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async getEndpoints(accountId: string): Promise<AccountEndpoints> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `acct#${accountId}`, sk: 'endpoints' }, ConsistentRead: true }));
    const item = out.Item as { endpoints?: WebhookEndpoint[]; v?: number } | undefined;
    return { account_id: accountId, endpoints: item?.endpoints ?? [], v: item?.v ?? 0 };
  }

  async putEndpoints(read: AccountEndpoints, endpoints: WebhookEndpoint[]): Promise<boolean> {
    return this.conditional(
      new PutCommand({
        TableName: this.table,
        // JSON drops the fields a move cleared (undefined), so the stored item has exactly the endpoint's fields.
        Item: { pk: `acct#${read.account_id}`, sk: 'endpoints', endpoints: JSON.parse(JSON.stringify(endpoints)) as unknown, v: read.v + 1 },
        ...(read.v === 0 ? { ConditionExpression: 'attribute_not_exists(pk)' } : { ConditionExpression: 'v = :v', ExpressionAttributeValues: { ':v': read.v } }),
      }),
    );
  }

  async createDelivery(delivery: Delivery): Promise<boolean> {
    return this.conditional(new PutCommand({ TableName: this.table, Item: this.itemOf(delivery), ConditionExpression: 'attribute_not_exists(pk)' }));
  }

  async getDelivery(webhookId: string, deliveryId: string): Promise<Delivery | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `wh#${webhookId}`, sk: `dlv#${deliveryId}` }, ConsistentRead: true }));
    return out.Item ? deliveryOf(out.Item) : undefined;
  }

  async listDeliveries(webhookId: string, limit: number): Promise<Delivery[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :dlv)',
        ExpressionAttributeValues: { ':pk': `wh#${webhookId}`, ':dlv': 'dlv#' },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(deliveryOf);
  }

  async dueDeliveries(nowIso: string, limit: number): Promise<Delivery[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'due',
        KeyConditionExpression: 'due_shard = :s AND next_attempt_at <= :now',
        ExpressionAttributeValues: { ':s': DUE_SHARD, ':now': nowIso },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(deliveryOf);
  }

  async updateDelivery(read: Delivery, next: Omit<Delivery, 'v'>): Promise<boolean> {
    return this.conditional(
      new PutCommand({ TableName: this.table, Item: this.itemOf({ ...next, v: read.v + 1 }), ConditionExpression: 'v = :v', ExpressionAttributeValues: { ':v': read.v } }),
    );
  }

  private itemOf(d: Delivery): Record<string, unknown> {
    const pending = d.state === 'pending' && d.next_attempt_at !== undefined;
    return {
      ...d,
      pk: `wh#${d.webhook_id}`,
      sk: `dlv#${d.delivery_id}`,
      ...(pending ? { due_shard: DUE_SHARD } : { next_attempt_at: undefined }),
      expires_at: Math.floor(Date.parse(d.created_at) / 1000 || Date.now() / 1000) + KEEP_SECONDS,
    };
  }

  private async conditional(command: PutCommand): Promise<boolean> {
    try {
      await this.db.send(command);
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}

function deliveryOf(item: Record<string, unknown>): Delivery {
  const { pk: _pk, sk: _sk, due_shard: _d, expires_at: _e, ...rest } = item;
  return rest as unknown as Delivery;
}
