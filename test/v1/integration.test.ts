/**
 * api-v1.md rule 3, as a new user follows it with the v1 document alone: obtain an API key,
 * hash a file on the client, sign the hash with the device Ed25519 key, post hash, signature
 * and chain data to /chain/anchor, keep the transaction hash, verify later. The proofs are then
 * checked without this service's code: the ML-DSA-65 signature with liboqs, the RFC 3161 token
 * with OpenSSL, the transaction with plain JSON-RPC.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { createMLDSA65 } from '@oqs/liboqs-js';
import { useStack } from '../support/stack.js';
import { json } from '../support/client.js';
import { loadV1Apps, type V1Apps } from './support.js';

let v1: V1Apps;
let registerApp: typeof import('../../functions/v2/account-register.js').app;
let setTierApp: typeof import('../../functions/v2/admin-set-tier.js').app;

before(async () => {
  await useStack();
  v1 = await loadV1Apps();
  registerApp = (await import('../../functions/v2/account-register.js')).app;
  setTierApp = (await import('../../functions/v2/admin-set-tier.js')).app;
});

describe('the v1 integration sequence', () => {
  it('obtains a key, anchors a signed photo hash and verifies every proof independently', async () => {
    // 1. Obtain an API key: register, then the operator moves the account to Pro (anchoring needs it).
    const reg = await registerApp.request(
      '/api/v2/account/register',
      json({ email: `photographer-${randomBytes(4).toString('hex')}@example.test`, password: 'a long enough password' }),
    );
    assert.equal(reg.status, 200);
    const { api_key: apiKey, account_id: accountId } = (await reg.json()) as { api_key: string; account_id: string };
    const upgrade = await setTierApp.request(`/api/v2/admin/accounts/${accountId}/tier`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
      body: JSON.stringify({ tier: 'pro' }),
    });
    assert.equal(upgrade.status, 200);

    // 2. Hash the file on the client.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'v1-flow-'));
    const photo = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(4096)]);
    writeFileSync(path.join(dir, 'photo.jpg'), photo);
    const imageHash = createHash('sha256').update(photo).digest('hex');

    // 3. Sign the hash with the device's Ed25519 key; first link of its chain.
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const publicKeyHex = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex');
    const signatureHex = sign(null, Buffer.from(imageHash, 'hex'), privateKey).toString('hex');
    const chainHash = createHash('sha256').update(Buffer.alloc(32)).update(Buffer.from(imageHash, 'hex')).digest('hex');

    // 4. Anchor.
    const res = await v1.anchor.request(
      '/api/v1/chain/anchor',
      json(
        { image_hash: imageHash, signature_hex: signatureHex, public_key_hex: publicKeyHex, chain_hash: chainHash, chain_index: 0, previous_hash: '0'.repeat(64), device_id: 'field-camera' },
        { 'X-API-Key': apiKey },
      ),
    );
    assert.equal(res.status, 201, await res.clone().text());
    const anchored = (await res.json()) as { tx_hash: string; pq_signature: string; timestamp_token: string };

    // 5. Store the transaction hash; later, verify.
    const storedTxHash = anchored.tx_hash;
    const verify = (await (await v1.verify.request(`/api/v1/chain/verify/${imageHash}`)).json()) as { found: boolean; verified: boolean; pq_verified: boolean; tx_hash: string };
    assert.deepEqual([verify.found, verify.verified, verify.pq_verified, verify.tx_hash], [true, true, true, storedTxHash]);
    const ledger = (await (await v1.ledgerVerify.request(`/api/v1/ledger/verify/${imageHash}`)).json()) as { verified: boolean; tx_hash: string };
    assert.deepEqual([ledger.verified, ledger.tx_hash], [true, storedTxHash]);

    // The ML-DSA-65 signature, with liboqs: over server_hash = SHA-256(statement), with the published key.
    const pq = (await (await v1.pqVerify.request(`/api/v1/pq/verify/${imageHash}`)).json()) as { statement: string };
    const info = (await (await v1.pqInfo.request('/api/v1/pq/info')).json()) as { public_key: string };
    const serverHash = createHash('sha256').update(pq.statement, 'utf8').digest();
    const oqs = await createMLDSA65();
    try {
      const ok = oqs.verify(new Uint8Array(serverHash), new Uint8Array(Buffer.from(anchored.pq_signature, 'base64')), new Uint8Array(Buffer.from(info.public_key, 'base64')));
      assert.equal(ok, true);
    } finally {
      oqs.destroy();
    }

    // The RFC 3161 token, with OpenSSL, against the photo itself and the TSA root the operator publishes.
    writeFileSync(path.join(dir, 'token.tsr'), Buffer.from(anchored.timestamp_token, 'base64'));
    const out = execFileSync(
      'openssl',
      ['ts', '-verify', '-data', path.join(dir, 'photo.jpg'), '-in', path.join(dir, 'token.tsr'), '-CAfile', path.join(process.env.DATA_DIR ?? '', 'tsa', 'root.pem')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    assert.match(out, /Verification: OK/);

    // The transaction, with plain JSON-RPC: its input is image_hash followed by server_hash.
    const rpc = await fetch(process.env.LEDGER_RPC_URL ?? '', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionByHash', params: [storedTxHash] }),
    });
    const tx = ((await rpc.json()) as { result: { input: string } }).result;
    assert.equal(tx.input, `0x${imageHash}${serverHash.toString('hex')}`);
  });
});
