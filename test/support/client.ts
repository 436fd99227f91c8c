import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ed25519PublicKeyFromSeed, signEd25519 } from '../../lib/crypto/ed25519.js';
import { computeChainHash } from '../../lib/crypto/hash.js';
import { app as registerApp } from '../../functions/v2/account-register.js';
import { app as setTierApp } from '../../functions/v2/admin-set-tier.js';

/** A fresh account through the real register endpoint, upgraded through the real admin endpoint. */
export async function createAccount(tier: 'free' | 'starter' | 'pro' | 'enterprise' = 'pro') {
  const email = `user-${randomBytes(6).toString('hex')}@example.test`;
  const res = await registerApp.request('/api/v2/account/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery staple' }),
  });
  if (res.status !== 200) throw new Error(`register failed: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { account_id: string; api_key: string; token: string };
  if (tier !== 'free') {
    const up = await setTierApp.request(`/api/v2/admin/accounts/${body.account_id}/tier`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
      body: JSON.stringify({ tier }),
    });
    if (up.status !== 200) throw new Error(`set-tier failed: ${up.status} ${await up.text()}`);
  }
  return { email, accountId: body.account_id, apiKey: body.api_key, token: body.token };
}

/** A device as the mobile app is one: an Ed25519 key and its hash chain. */
export class Device {
  readonly seed = randomBytes(32);
  readonly publicKeyHex = Buffer.from(ed25519PublicKeyFromSeed(this.seed)).toString('hex');
  index = 0;
  previous: string | null = null;

  /** The anchor request body for the next link, signed over the raw hash bytes. */
  next(imageHash = randomHash()) {
    const chainHash = computeChainHash(this.previous, imageHash);
    const body = {
      sha256_hash: imageHash,
      chain_index: this.index,
      chain_hash: chainHash,
      previous_hash: this.previous,
      signature_hex: Buffer.from(signEd25519(this.seed, Buffer.from(imageHash, 'hex'))).toString('hex'),
      public_key_hex: this.publicKeyHex,
    };
    return body;
  }

  /** Moves the chain on after a successful anchor of `body`. */
  advance(body: { chain_hash: string }) {
    this.previous = body.chain_hash;
    this.index += 1;
  }
}

/** The next link of `device` as the anchoring domain takes it (lib/evidence/anchor.ts AnchorInput). */
export function anchorInputFor(device: Device, accountId: string, tier: 'starter' | 'pro' | 'enterprise' = 'pro') {
  return anchorInputOf(device.next(), accountId, tier);
}

/** An anchor request body (as a device sends it) as the anchoring domain takes it. */
export function anchorInputOf(
  b: { sha256_hash: string; chain_index: number; chain_hash: string; previous_hash: string | null; signature_hex: string; public_key_hex: string },
  accountId: string,
  tier: 'starter' | 'pro' | 'enterprise' = 'pro',
) {
  return {
    imageHash: b.sha256_hash,
    chainIndex: b.chain_index,
    chainHash: b.chain_hash,
    previousHash: b.previous_hash,
    signatureHex: b.signature_hex,
    publicKeyHex: b.public_key_hex,
    accountId,
    tier,
    apiVersion: 'v2' as const,
  };
}

export function randomHash(): string {
  return randomBytes(32).toString('hex');
}

export const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/**
 * Sends the identical request again while it answers 503 (a database call past its deadline on a
 * loaded machine: the problem says "Retry the identical request", as a phone does), at most
 * `tries` times in all; the last answer. Every other answer is the test's to judge.
 */
export async function sendUntilNot503(send: () => Promise<Response>, tries = 5): Promise<Response> {
  let res = await send();
  for (let i = 1; i < tries && res.status === 503; i++) {
    await sleep(250 * i);
    res = await send();
  }
  return res;
}
