/**
 * lib/store/resend-safe.ts: a conditional write whose first attempt landed but whose answer was
 * lost (the attempt deadline fired) is sent again by the SDK; the second attempt fails its
 * condition, and must still be answered as the success it was. A real dynalite, the real client
 * (createDocumentClient), and an answer dropped inside the SDK's retry loop.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { moveState } from '../../lib/store/versioned.js';
import { withTokenSet } from '../../lib/store/resend-safe.js';
import { startStore, type Store } from '../ledger/helpers.js';

let store: Store;
before(async () => {
  store = await startStore();
});
after(async () => {
  await store?.stop();
});

/** The next `n` requests reach the database, but their answers are lost (as after an attempt deadline), so the SDK sends them again. */
function loseAnswers(db: DynamoDBDocumentClient, n: { lose: number; before?: boolean }): void {
  db.middlewareStack.add(
    (next) => async (args) => {
      if (n.lose > 0) {
        n.lose--;
        if (!n.before) await next(args); // landed
        throw Object.assign(new Error('the answer came too late'), { name: 'TimeoutError', $metadata: {} });
      }
      return next(args);
    },
    { step: 'deserialize', name: `loseAnswers${randomBytes(3).toString('hex')}` },
  );
}

const key = () => ({ pk: `tx#0x${randomBytes(20).toString('hex')}`, sk: Math.floor(Math.random() * 1e6) });

describe('conditional writes the SDK sends twice', () => {
  it('a put that landed before its answer was lost is answered as a success, not as a lost condition', async () => {
    const db = store.db;
    const k = key();
    const counter = { lose: 1 };
    loseAnswers(db, counter);
    await db.send(new PutCommand({ TableName: store.tables.ledger, Item: { ...k, tx_hash: '0xaa' }, ConditionExpression: 'attribute_not_exists(pk)' }));
    assert.equal(counter.lose, 0, 'the first answer was lost');
    const stored = (await db.send(new GetCommand({ TableName: store.tables.ledger, Key: k, ConsistentRead: true }))).Item;
    assert.deepEqual(stored, { ...k, tx_hash: '0xaa' }, 'stored once, and the token is not shown');
  });

  it('a state move that landed is answered with its attributes', async () => {
    const db = store.db;
    const k = key();
    await db.send(new PutCommand({ TableName: store.tables.ledger, Item: { ...k, state: 'a', v: 1 } }));
    loseAnswers(db, { lose: 1 });
    const outcome = await moveState(db, { table: store.tables.ledger, key: k, stateAttribute: 'state', versionAttribute: 'v', from: 'a', version: 1, to: 'b', returnValues: 'ALL_NEW' });
    assert.equal(outcome.ok, true);
    assert.equal(outcome.ok && outcome.attributes?.state, 'b');
    assert.equal(outcome.ok && outcome.attributes?.v, 2);
    assert.equal(outcome.ok && outcome.attributes?._wt, undefined);
  });

  it('a condition lost to another writer still fails, retried or not', async () => {
    const db = store.db;
    const k = key();
    await db.send(new PutCommand({ TableName: store.tables.ledger, Item: { ...k, tx_hash: '0xother' }, ConditionExpression: 'attribute_not_exists(pk)' }));
    // The first attempt never reaches the database; the second finds another writer's item.
    loseAnswers(db, { lose: 1, before: true });
    await assert.rejects(
      db.send(new PutCommand({ TableName: store.tables.ledger, Item: { ...k, tx_hash: '0xmine' }, ConditionExpression: 'attribute_not_exists(pk)' })),
      { name: 'ConditionalCheckFailedException' },
    );
    await assert.rejects(
      db.send(new UpdateCommand({ TableName: store.tables.ledger, Key: k, UpdateExpression: 'SET tx_hash = :t', ConditionExpression: 'tx_hash = :old', ExpressionAttributeValues: { ':t': '0xmine', ':old': '0xnot' } })),
      { name: 'ConditionalCheckFailedException' },
    );
  });

  it('no read shows the token', async () => {
    const db = store.db;
    const pk = `tx#0x${randomBytes(20).toString('hex')}`;
    for (const sk of [1, 2]) await db.send(new PutCommand({ TableName: store.tables.ledger, Item: { pk, sk, n: sk }, ConditionExpression: 'attribute_not_exists(pk)' }));
    await db.send(new UpdateCommand({ TableName: store.tables.ledger, Key: { pk, sk: 1 }, UpdateExpression: 'ADD n :one', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':one': 1 } }));
    const items = (await db.send(new QueryCommand({ TableName: store.tables.ledger, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }))).Items ?? [];
    assert.deepEqual(items, [{ pk, sk: 1, n: 2 }, { pk, sk: 2, n: 2 }]);
  });

  it('adds the token to the SET section of any update expression', () => {
    assert.equal(withTokenSet('SET a = :a'), 'SET #_wt = :_wt, a = :a');
    assert.equal(withTokenSet('ADD n :one'), 'ADD n :one SET #_wt = :_wt');
    assert.equal(withTokenSet('DELETE released :set SET allocated_at = :now'), 'DELETE released :set SET #_wt = :_wt, allocated_at = :now');
    assert.equal(withTokenSet('REMOVE x'), 'REMOVE x SET #_wt = :_wt');
  });
});
