/**
 * Sealed webhook signing secrets (docs/webhooks.md "The signing secret"). A receiver checks our
 * HMAC with the secret, so the service must be able to recover it: it is kept encrypted, bound
 * to its account and endpoint (a sealed value copied onto another endpoint does not open):
 * - in AWS (`k1.`): KMS Encrypt/Decrypt under the symmetric key WEBHOOK_SECRETS_KMS_KEY_ID, with
 *   the account and endpoint as encryption context (CloudTrail logs each Decrypt with it). Only
 *   the create endpoint may Encrypt and only the delivery worker may Decrypt (infra/functions.json);
 *   the table alone yields nothing;
 * - locally (`l1.`): AES-256-GCM under a 32-byte key in DATA_DIR/secrets/webhook-secrets.key
 *   (0600, made on first use), the account and endpoint as associated data.
 * Neither form is ever logged; the clear secret is shown once, in the create's answer.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DecryptCommand, EncryptCommand, type KMSClient } from '@aws-sdk/client-kms';

export interface SealContext {
  webhook_id: string;
  account_id: string;
}

export interface SecretBox {
  seal(secret: string, context: SealContext): Promise<string>;
  open(sealed: string, context: SealContext): Promise<string>;
}

const aad = (c: SealContext) => Buffer.from(`${c.account_id}/${c.webhook_id}`);

/** AES-256-GCM under a key file, made (0600) on first use. */
export function localSecretBox(keyFile: string): SecretBox {
  let key: Promise<Buffer> | undefined;
  const keyOf = () =>
    (key ??= (async () => {
      try {
        return await readFile(keyFile);
      } catch {
        await mkdir(path.dirname(keyFile), { recursive: true, mode: 0o700 });
        // `wx`: of two processes that make it at once, one writes; the other reads what it wrote.
        await writeFile(keyFile, randomBytes(32), { mode: 0o600, flag: 'wx' }).catch(() => undefined);
        return readFile(keyFile);
      }
    })());
  return {
    async seal(secret, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', await keyOf(), iv).setAAD(aad(context));
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return `l1.${iv.toString('base64')}.${sealed.toString('base64')}.${cipher.getAuthTag().toString('base64')}`;
    },
    async open(sealed, context) {
      const [form, iv, data, tag] = sealed.split('.');
      if (form !== 'l1' || !iv || !data || !tag) throw new Error('not a locally sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', await keyOf(), Buffer.from(iv, 'base64')).setAAD(aad(context)).setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}

/** KMS Encrypt/Decrypt (the client has its deadlines: lib/crypto/kms-client.ts). */
export function kmsSecretBox(client: () => KMSClient, keyId: string | undefined): SecretBox {
  return {
    async seal(secret, context) {
      if (!keyId) throw new Error('WEBHOOK_SECRETS_KMS_KEY_ID is not set');
      const out = await client().send(new EncryptCommand({ KeyId: keyId, Plaintext: Buffer.from(secret), EncryptionContext: { ...context } }));
      if (!out.CiphertextBlob) throw new Error('KMS returned no ciphertext');
      return `k1.${Buffer.from(out.CiphertextBlob).toString('base64')}`;
    },
    async open(sealed, context) {
      if (!sealed.startsWith('k1.')) throw new Error('not a KMS-sealed secret');
      const out = await client().send(new DecryptCommand({ CiphertextBlob: Buffer.from(sealed.slice(3), 'base64'), EncryptionContext: { ...context } }));
      if (!out.Plaintext) throw new Error('KMS returned no plaintext');
      return Buffer.from(out.Plaintext).toString('utf8');
    },
  };
}
