import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { LocalMlDsaSigner } from '../../lib/crypto/ml-dsa.js';
import { getLedgerSender, getPqRegistrationDeps } from '../../lib/deps/anchoring.js';
import { getPqRegistrations } from '../../lib/deps/evidence.js';
import { getConfig, getDb, resetCoreDeps } from '../../lib/deps/core.js';
import { ensureTables } from '../../lib/store/tables.js';
import { ensurePqKeyRegistered, type PqRegistrationDeps } from '../../lib/evidence/pq-registration.js';
import { decodePqKeyData } from '../../lib/ledger/anchor-data.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { runAdmin } from '../../lib/cli/admin.js';

type Registration = {
  registered: boolean;
  fingerprint: string;
  tx_hash?: string;
  tx_status?: string;
  verified?: boolean;
  confirmations?: number;
  input_data?: string;
  explorer_url?: string;
};

let app: typeof import('../../functions/v1/pq-registration.js').app;
let infoApp: typeof import('../../functions/v1/pq-info.js').app;

before(async () => {
  await useStack();
  // Tables of its own: other files share the stack, and `npm start` processes some of them run
  // (test/faults/batch-sealing.test.ts) register the shared key at start-up. This file tests the
  // registration from "not registered yet", so it must not see theirs.
  process.env.TABLE_PREFIX = `pqreg-${randomBytes(3).toString('hex')}-`;
  resetCoreDeps();
  await ensureTables(getDb(), getConfig().tables);
  app = (await import('../../functions/v1/pq-registration.js')).app;
  infoApp = (await import('../../functions/v1/pq-info.js')).app;
});

const readRegistration = async () => {
  const res = await app.request('/api/v1/pq/registration');
  return { status: res.status, body: (await res.json()) as Registration };
};

/** Registration dependencies over the real ledger sender, for a fresh key, counting the transactions sent. */
async function depsForNewKey(options: { failFirstSubmits?: number } = {}): Promise<{ deps: PqRegistrationDeps; submits: () => number }> {
  const sender = await getLedgerSender();
  const config = getConfig();
  let submits = 0;
  let failures = options.failFirstSubmits ?? 0;
  return {
    submits: () => submits,
    deps: {
      store: getPqRegistrations(),
      signer: LocalMlDsaSigner.fromSeed(randomBytes(32)),
      ledger: {
        chainId: config.ledger.chainId,
        address: () => sender.address(),
        submit: async (data, meta) => {
          if (failures > 0) {
            failures -= 1;
            throw new Error('node unreachable (simulated)');
          }
          submits += 1;
          return sender.submit(data, meta);
        },
        waitForReceipt: (hash, timeoutMs) => sender.waitForReceipt(hash, timeoutMs),
        listSlots: (from) => sender.listSlots(from),
      },
      receiptTimeoutMs: 10_000,
    },
  };
}

describe('ML-DSA-65 key registration on the ledger', () => {
  it('answers 404 registered:false with the fingerprint before the key is registered', async () => {
    const info = (await (await infoApp.request('/api/v1/pq/info')).json()) as { fingerprint: string };
    const { status, body } = await readRegistration();
    assert.equal(status, 404);
    assert.equal(body.registered, false);
    assert.equal(body.fingerprint, info.fingerprint);
  });

  it('registers the key once: a transaction whose input carries the fingerprint, read back from the chain', async () => {
    const { registration, sentNow } = await ensurePqKeyRegistered(await getPqRegistrationDeps());
    assert.equal(sentNow, true);
    assert.equal(registration.state, 'confirmed');
    const { status, body } = await readRegistration();
    assert.equal(status, 200);
    assert.equal(body.registered, true);
    assert.equal(body.tx_hash, registration.tx_hash);
    assert.equal(body.tx_status, 'confirmed');
    assert.equal(body.verified, true);
    assert.ok((body.confirmations ?? 0) >= 1);
    assert.match(body.explorer_url ?? '', /\/ledger\/tx\/0x[0-9a-f]{64}$/);
    const tx = await new RpcReader(getConfig().ledger.rpcUrl).getTransaction(registration.tx_hash ?? '');
    assert.equal(tx?.input, body.input_data);
    assert.equal(decodePqKeyData(tx?.input ?? '0x').fingerprint, body.fingerprint);
  });

  it('sends no second transaction when the registration runs again', async () => {
    const first = await readRegistration();
    const { registration, sentNow } = await ensurePqKeyRegistered(await getPqRegistrationDeps());
    assert.equal(sentNow, false);
    assert.equal(registration.tx_hash, first.body.tx_hash);
  });

  it('sends exactly one transaction when several runs race', async () => {
    const { deps, submits } = await depsForNewKey();
    const results = await Promise.all(Array.from({ length: 6 }, () => ensurePqKeyRegistered(deps)));
    assert.equal(submits(), 1);
    assert.equal(new Set(results.map((r) => r.registration.tx_hash)).size, 1);
    assert.equal(results.filter((r) => r.sentNow).length, 1);
  });

  it('releases the claim when sending fails, so that the next run registers', async () => {
    const { deps, submits } = await depsForNewKey({ failFirstSubmits: 1 });
    await assert.rejects(ensurePqKeyRegistered(deps), /simulated/);
    const { registration, sentNow } = await ensurePqKeyRegistered(deps);
    assert.equal(sentNow, true);
    assert.equal(registration.state, 'confirmed');
    assert.equal(submits(), 1);
  });

  it('is what npm run admin -- register-pq-key runs', async () => {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    assert.equal(await runAdmin(['register-pq-key'], io), 0);
    const printed = JSON.parse(out.join('\n')) as { registration: { tx_hash: string }; sentNow: boolean };
    assert.equal(printed.sentNow, false);
    assert.equal(printed.registration.tx_hash, (await readRegistration()).body.tx_hash);
    assert.equal(await runAdmin(['register-pq-key', 'extra'], io), 2);
  });
});
