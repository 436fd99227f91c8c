import { randomUUID } from 'node:crypto';
import { DescribeTableCommand, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/**
 * Conditional writes that the SDK sends again recognise their own first attempt.
 *
 * Every attempt has a deadline (dynamo.ts): an attempt whose answer is late is abandoned and the
 * SDK sends the write again, but the first may have landed (a slow or frozen database applies it
 * anyway). The second attempt then fails its condition, because the first changed what it was
 * conditioned on, and the caller would take its own write for another writer's: a slot it wrote
 * looked taken (its transaction re-signed at another nonce, the first one orphaned), a state move
 * it made looked lost. Measured: under load, 1 run in 3 of 200 concurrent ledger submits.
 *
 * So every conditional PutItem and UpdateItem carries a fresh token in the attribute `_wt`; when
 * it fails its condition after more than one attempt, the item is read (strongly consistent) and
 * if it carries this call's token, the write is answered as the success it was (with the item as
 * its Attributes). The token is the last writer's; another write after ours replaces it, and then
 * the failure stands, as it would have without the resend. `_wt` is removed from every item a read
 * or a write returns, so no caller ever sees it.
 */
export const WRITE_TOKEN = '_wt';

const isConditionalCheckFailed = (error: unknown) => (error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException';

/**
 * The input as this middleware sees it: the document client's (plain values), because it runs
 * before the document client's marshalling (which sits right before the serializer). The service
 * sends every write through the document client (lib-dynamodb).
 */
type Input = Record<string, unknown> & {
  TableName?: string;
  Key?: Record<string, unknown>;
  Item?: Record<string, unknown>;
  ConditionExpression?: string;
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
  ReturnValues?: string;
};

/** Adds `#_wt = :_wt` to the SET section of an update expression (or a SET section when there is none). */
export function withTokenSet(expression: string): string {
  const set = /(^|\s)SET\s/.exec(expression);
  if (!set) return `${expression} SET #_wt = :_wt`;
  const at = set.index + set[0].length;
  return `${expression.slice(0, at)}#_wt = :_wt, ${expression.slice(at)}`;
}

function strip(item: unknown): void {
  if (item && typeof item === 'object') delete (item as Record<string, unknown>)[WRITE_TOKEN];
}

/** Removes the token from what a command answers (GetItem, Query, Scan, BatchGetItem, TransactGetItems, writes' Attributes). */
function stripOutput(output: Record<string, unknown>): void {
  strip(output.Item);
  strip(output.Attributes);
  if (Array.isArray(output.Items)) output.Items.forEach(strip);
  const responses = output.Responses;
  if (Array.isArray(responses)) responses.forEach((r: { Item?: unknown }) => strip(r?.Item));
  else if (responses && typeof responses === 'object') for (const items of Object.values(responses)) if (Array.isArray(items)) items.forEach(strip);
}

export function installResendSafeWrites(client: DynamoDBClient): void {
  // The tables' key names, read once per client (a handful of tables): they go with this client, not a ProcessCache.
  const keySchemas = new Map<string, Promise<string[]>>();
  const keyNames = (table: string): Promise<string[]> => {
    let known = keySchemas.get(table);
    if (!known) {
      known = client.send(new DescribeTableCommand({ TableName: table })).then((d) => (d.Table?.KeySchema ?? []).map((k) => k.AttributeName ?? ''));
      keySchemas.set(table, known);
      known.catch(() => keySchemas.delete(table));
    }
    return known;
  };

  // This middleware's own reads of the token: their answers keep it.
  const ownReads = new WeakSet<object>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName;
      const input = args.input as Input;
      if (ownReads.has(input)) return next(args);
      const conditional = (command === 'PutItemCommand' || command === 'UpdateItemCommand') && typeof input.ConditionExpression === 'string';
      if (!conditional) {
        const out = await next(args);
        stripOutput(out.output as unknown as Record<string, unknown>);
        return out;
      }
      const token = randomUUID();
      // A copy: the caller's command object is left as it was (it may be sent again).
      const tokened: Input =
        command === 'PutItemCommand'
          ? { ...input, Item: { ...input.Item, [WRITE_TOKEN]: token } }
          : {
              ...input,
              UpdateExpression: withTokenSet(input.UpdateExpression ?? ''),
              ExpressionAttributeNames: { ...input.ExpressionAttributeNames, '#_wt': WRITE_TOKEN },
              ExpressionAttributeValues: { ...input.ExpressionAttributeValues, ':_wt': token },
            };
      try {
        const out = await next({ ...args, input: tokened });
        stripOutput(out.output as unknown as Record<string, unknown>);
        return out;
      } catch (error) {
        const attempts = (error as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1;
        if (!isConditionalCheckFailed(error) || attempts < 2 || !input.TableName) throw error;
        // Sent more than once: was the condition lost to our own first attempt?
        let key = input.Key;
        if (!key && input.Item) {
          const names = await keyNames(input.TableName).catch(() => []);
          if (names.length > 0 && names.every((n) => input.Item?.[n] !== undefined)) key = Object.fromEntries(names.map((n) => [n, input.Item?.[n]]));
        }
        if (!key) throw error;
        const read = { TableName: input.TableName, Key: marshall(key), ConsistentRead: true };
        ownReads.add(read);
        const now = await client.send(new GetItemCommand(read)).catch(() => undefined);
        if (now?.Item?.[WRITE_TOKEN]?.S !== token) throw error;
        const item = unmarshall(now.Item);
        strip(item);
        return { response: {}, output: { $metadata: (error as { $metadata?: object }).$metadata ?? {}, ...(command === 'UpdateItemCommand' && input.ReturnValues && input.ReturnValues !== 'NONE' ? { Attributes: item } : {}) } };
      }
    },
    // After the document client's marshalling (initialize), around the retries (finalizeRequest).
    { step: 'serialize', name: 'resendSafeWrites', priority: 'high' },
  );
}
