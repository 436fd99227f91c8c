/**
 * The AWS SDK's CPU per DynamoDB request (`npx tsx bench/sdk-request.ts`): the service's client
 * (lib/store/dynamo.ts: its deadlines, its outage and resend-safe steps, the SDK's logger step
 * removed) against a client with the SDK's defaults, with and without that step, on an embedded dynalite in this process, an
 * UpdateItem (ReturnValues ALL_NEW) and a GetItem per round, in turns, three times. The CPU is this
 * process's, dynalite's share included (the same for both); the difference is the client's.
 * Writes its JSON result as the last line of stdout. REQUESTS_N=1000 rounds per turn.
 */
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '../lib/local/dynamo-server.js';
import { createDocumentClient } from '../lib/store/dynamo.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const rounds = Number(process.env.REQUESTS_N) > 0 ? Number(process.env.REQUESTS_N) : 1000;
const dynamo = await startEmbeddedDynamo();
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const plain = (withoutLogger: boolean) => {
  const client = new DynamoDBClient({ region: 'us-east-1', endpoint: dynamo.endpoint, credentials });
  if (withoutLogger) client.middlewareStack.remove('loggerMiddleware');
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
};
const clients: Record<string, DynamoDBDocumentClient> = {
  'SDK defaults': plain(false),
  'SDK defaults without the logger step': plain(true),
  'the service (lib/store/dynamo.ts)': createDocumentClient({ region: 'us-east-1', endpoint: dynamo.endpoint }),
};
const table = 'sdk-request';
await (clients['SDK defaults'] as DynamoDBDocumentClient).send(
  new CreateTableCommand({ TableName: table, AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }], ProvisionedThroughput: { ReadCapacityUnits: 5, WriteCapacityUnits: 5 } }),
);
async function round(db: DynamoDBDocumentClient, i: number): Promise<void> {
  const Key = { pk: `k${i % 50}` };
  await db.send(new UpdateCommand({ TableName: table, Key, UpdateExpression: 'SET a = :a, b = :b ADD n :one', ExpressionAttributeValues: { ':a': 'x'.repeat(100), ':b': { x: 1, y: [1, 2, 3] }, ':one': 1 }, ReturnValues: 'ALL_NEW' }));
  await db.send(new GetCommand({ TableName: table, Key }));
}
const results: Record<string, number[]> = {};
for (let turn = 0; turn < 3; turn++) {
  for (const [name, db] of Object.entries(clients)) {
    for (let i = 0; i < 50; i++) await round(db, i); // warm-up
    const t0 = process.cpuUsage();
    for (let i = 0; i < rounds; i++) await round(db, i);
    const used = process.cpuUsage(t0);
    const perRequest = (used.user + used.system) / 1000 / (2 * rounds);
    (results[name] ??= []).push(Math.round(perRequest * 1000) / 1000);
    process.stderr.write(`sdk-request: ${name}: ${perRequest.toFixed(3)} ms CPU per request (client and dynalite)\n`);
  }
}
await dynamo.stop();
process.stdout.write(`${JSON.stringify({ cpuMsPerRequest: results, rounds })}\n`);
process.exit(0);
