import assert from 'node:assert/strict';
import { createPrivateKey, createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { JsonRpcProvider, Wallet, parseEther } from 'ethers';
import { ConfigError, loadConfig } from '../../lib/config.js';
import { verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';
import { generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { getLedgerSender, getSigner, getTsa } from '../../lib/deps/anchoring.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { loadTsaRoots } from '../../lib/deps/verification.js';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { ecdsaTestKey, mlDsa65TestKey, startKmsTestServer, type KmsTestServer } from '../support/kms-server.js';
import { useStack } from '../support/stack.js';

/**
 * The production wiring (lib/deps/anchoring.ts): PQ_SIGNER=kms, TSA_KMS_KEY_ID with its
 * certificate files, LEDGER_WALLET=kms. The SDK clients the composition root builds are pointed at
 * the KMS-protocol test server through AWS_ENDPOINT_URL_KMS, as an operator would point them at a
 * VPC endpoint; the wallet is funded on the test stack's chain and sends a real transaction.
 */

const KMS_ENV = [
  'AWS_ENDPOINT_URL_KMS',
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'PQ_SIGNER',
  'PQ_SIGNER_KMS_KEY_ID',
  'TSA_KMS_KEY_ID',
  'TSA_CERT_FILE',
  'TSA_ROOT_FILE',
  'LEDGER_WALLET',
  'LEDGER_KMS_KEY_ID',
] as const;
const saved = Object.fromEntries(KMS_ENV.map((k) => [k, process.env[k]]));

let kms: KmsTestServer;
let env: Record<string, string>;
let rootPem: string;
const walletSecret = secp256k1.utils.randomSecretKey();
const walletAddress = new Wallet(Buffer.from(walletSecret).toString('hex')).address;

before(async () => {
  env = await useStack();
  // The TSA key pair of a generated bundle, its private half moved into the KMS test server.
  const bundle = await generateTsaCertificates();
  const d = createPrivateKey(bundle.tsaKeyPkcs8Pem).export({ format: 'jwk' }).d ?? '';
  const tsaKey = ecdsaTestKey('wiring-tsa', 'ECC_NIST_P256', Buffer.from(d, 'base64url'));
  const pqKey = mlDsa65TestKey('wiring-pq', randomBytes(32));
  const walletKey = ecdsaTestKey('wiring-wallet', 'ECC_SECG_P256K1', walletSecret);
  kms = await startKmsTestServer([tsaKey, pqKey, walletKey]);
  rootPem = bundle.rootCertPem;
  const dir = env.DATA_DIR ?? '';
  await writeFile(path.join(dir, 'kms-tsa.pem'), bundle.tsaCertPem);
  await writeFile(path.join(dir, 'kms-tsa-root.pem'), bundle.rootCertPem);
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_KMS: kms.endpoint,
    AWS_REGION: kms.region,
    AWS_ACCESS_KEY_ID: 'AKIDTEST',
    AWS_SECRET_ACCESS_KEY: 'test-secret',
    PQ_SIGNER: 'kms',
    PQ_SIGNER_KMS_KEY_ID: kms.arn(pqKey.keyId),
    TSA_KMS_KEY_ID: kms.arn(tsaKey.keyId),
    TSA_CERT_FILE: path.join(dir, 'kms-tsa.pem'),
    TSA_ROOT_FILE: path.join(dir, 'kms-tsa-root.pem'),
    LEDGER_WALLET: 'kms',
    LEDGER_KMS_KEY_ID: kms.arn(walletKey.keyId),
  });
  resetCoreDeps();
});

after(async () => {
  for (const k of KMS_ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  resetCoreDeps();
  await kms?.close();
});

describe('the composition root with every signing key on KMS', () => {
  it('builds the TSA on the KMS key with the configured certificate, and verification trusts TSA_ROOT_FILE', async () => {
    const tsa = await getTsa();
    const imprint = createHash('sha256').update('wired').digest();
    const issued = await tsa.timestamp(imprint);
    const roots = await loadTsaRoots();
    assert.deepEqual(roots, [rootPem]);
    const check = await verifyTimestampResponse(issued.response, { imprint, roots, hashAlgorithm: 'SHA-256' });
    assert.equal(check.ok, true, JSON.stringify(check.checks));
    assert.ok(kms.requests.some((r) => r.operation === 'Sign' && r.body.KeyId === process.env.TSA_KMS_KEY_ID));
  });

  it('builds the ML-DSA-65 signer on the KMS key', async () => {
    const signer = await getSigner();
    const message = randomBytes(64);
    assert.equal(verifyMlDsa65(await signer.sign(message), message, await signer.publicKey()), true);
  });

  it('builds the ledger sender on the KMS wallet, which sends a transaction the chain mines', async () => {
    const sender = await getLedgerSender();
    assert.equal(await sender.address(), walletAddress.toLowerCase());

    // Fund the KMS wallet from the stack's local wallet.
    const provider = new JsonRpcProvider(env.LEDGER_RPC_URL);
    try {
      const funder = new Wallet((await readFile(path.join(env.DATA_DIR ?? '', 'keys', 'ledger-wallet.key'), 'utf8')).trim(), provider);
      await (await funder.sendTransaction({ to: walletAddress, value: parseEther('1') })).wait();
    } finally {
      provider.destroy();
    }
    const imageHash = randomBytes(32).toString('hex');
    const sent = await sender.submit(encodeAnchorData(imageHash, randomBytes(32).toString('hex')), { kind: 'anchor', ref: imageHash });
    const receipt = await sender.waitForReceipt(sent.txHash, 10_000);
    assert.equal(receipt?.status, 'confirmed');
    assert.equal(sent.from, walletAddress.toLowerCase());
  });
});

describe('production configuration', () => {
  it('requires the certificate and root files with TSA_KMS_KEY_ID', () => {
    assert.throws(
      () => loadConfig({ TSA_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:111122223333:key/x' }),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => /TSA_CERT_FILE and TSA_ROOT_FILE/.test(p)),
    );
    const config = loadConfig({ TSA_KMS_KEY_ID: 'k', TSA_CERT_FILE: 'infra/keys/prod/tsa.pem', TSA_ROOT_FILE: 'infra/keys/prod/tsa-root.pem' });
    assert.equal(config.tsa.certFile, 'infra/keys/prod/tsa.pem');
  });

  it('replaces stuck transactions after 5 minutes unless told otherwise (0: never)', () => {
    assert.equal(loadConfig({}).ledger.replaceAfterMinutes, 5);
    assert.equal(loadConfig({ LEDGER_REPLACE_AFTER_MINUTES: '0' }).ledger.replaceAfterMinutes, 0);
    assert.throws(() => loadConfig({ LEDGER_REPLACE_AFTER_MINUTES: '-1' }), ConfigError);
  });
});
