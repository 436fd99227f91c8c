/**
 * Webhooks are never lost (docs/webhooks.md "Never lost"): the whole service (`npm start`: the API,
 * dynalite, the ledger node, the change feed and the delivery worker) is SIGKILLed while its
 * deliveries are in flight, at a receiver that holds its answers; after the restart every event of
 * every anchor answered 200 reaches the receiver, verified by the `standardwebhooks` package.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { DeviceChain, killStartedServices, Service, setUpAccount } from '../support/crash-harness.js';
import { waitFor } from '../support/wait.js';
import { Receiver } from '../webhooks/support.js';

const ANCHORS = 6;

describe('webhooks across a SIGKILL of the service', () => {
  after(() => killStartedServices());

  it('delivers every anchored event of every 200 after the service was killed with deliveries in flight', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'webhooks-kill-'));
    after(() => rm(dataDir, { recursive: true, force: true }));
    // Before the kill the receiver holds every answer: the deliveries are in flight when the kill comes.
    let holding = true;
    const held: (() => void)[] = [];
    const receiver = new Receiver(() => (holding ? new Promise<number>((resolve) => held.push(() => resolve(200))) : 200));
    const url = await receiver.start();
    after(() => receiver.stop());
    const service = await Service.create({ dataDir, logFile: path.join(dataDir, 'service.log'), env: { WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1,1,1' }, startDeadlineMs: 180_000 });
    await service.start();
    const account = await setUpAccount(service);
    const sub = await fetch(`${service.base}/api/v2/account/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
      body: JSON.stringify({ url, events: ['evidence.anchored'] }),
    });
    assert.equal(sub.status, 200, await sub.clone().text());
    receiver.secret = ((await sub.json()) as { secret: string }).secret;

    const device = new DeviceChain(0);
    const answered: string[] = [];
    for (let i = 0; i < ANCHORS; i++) {
      const { imageHash, body } = device.nextBody();
      const res = await fetch(`${service.base}/api/v2/evidence/anchor`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey }, body });
      assert.equal(res.status, 200, await res.text());
      answered.push(imageHash);
    }
    await waitFor('a delivery in flight at the holding receiver', 120_000, () => (receiver.received.length > 0 ? true : undefined), 100);
    await service.kill();
    holding = false;
    for (const release of held) release();

    await service.start();
    const missing = () => answered.filter((h) => !receiver.received.some((r) => r.verified && r.payload?.type === 'evidence.anchored' && r.payload.data.image_hash === h));
    await waitFor(`every anchored event at the receiver (log ${service.options.logFile})`, 240_000, () => (missing().length === 0 ? true : undefined), 250);
    assert.deepEqual(missing(), []);
    assert.ok(receiver.received.every((r) => r.verified), 'every request verified by standardwebhooks');
    // At least once: a delivery held at the kill may arrive twice, always with its one webhook-id.
    const ids = new Set(receiver.received.filter((r) => r.payload?.type === 'evidence.anchored').map((r) => String(r.headers['webhook-id'])));
    assert.equal(ids.size, ANCHORS);
    await service.kill();
  });
});
