/**
 * The crash harness's phones (crash-harness.ts): a device's Ed25519 key and hash chain, and the
 * request bodies it sends, byte-identical on every retry; built with node:crypto only.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

const ZERO32 = Buffer.alloc(32);
export const ANCHOR_PATH = '/api/v2/evidence/anchor';
export const REGISTER_PATH = '/api/v2/evidence/hash';

/** A hash registration's body (32 random bytes), byte-identical on every retry. */
export function registrationBody(): { index: number; imageHash: string; body: string } {
  const imageHash = randomBytes(32).toString('hex');
  return { index: -1, imageHash, body: JSON.stringify({ sha256_hash: imageHash }) };
}


// ─── devices and the client ─────────────────────────────────────────────────────────────────────

/** A phone: an Ed25519 key and its hash chain, built with node:crypto only. */
export class DeviceChain {
  readonly privateKey: KeyObject;
  readonly publicKeyHex: string;
  private previous: Buffer | null = null;
  /** The request bodies, by chain index (byte-identical on every retry). */
  readonly bodies: string[] = [];
  readonly hashes: string[] = [];

  constructor(readonly id: number) {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    this.privateKey = privateKey;
    this.publicKeyHex = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
  }

  /** The body of the next photo's anchor request (image hash: 32 random bytes). */
  nextBody(): { index: number; imageHash: string; body: string } {
    const index = this.hashes.length;
    const image = randomBytes(32);
    const chainHash = createHash('sha256').update(this.previous ?? ZERO32).update(image).digest();
    const body = JSON.stringify({
      sha256_hash: image.toString('hex'),
      chain_index: index,
      chain_hash: chainHash.toString('hex'),
      previous_hash: this.previous ? this.previous.toString('hex') : null,
      signature_hex: sign(null, image, this.privateKey).toString('hex'),
      public_key_hex: this.publicKeyHex,
    });
    this.previous = chainHash;
    this.bodies.push(body);
    this.hashes.push(image.toString('hex'));
    return { index, imageHash: image.toString('hex'), body };
  }

  /** A different photo for an index already used (the fork probe); does not move the chain. */
  conflictingBody(index: number): { imageHash: string; body: string } {
    const previous = index === 0 ? null : chainHashAt(this, index - 1);
    const image = randomBytes(32);
    const chainHash = createHash('sha256').update(previous ?? ZERO32).update(image).digest();
    return {
      imageHash: image.toString('hex'),
      body: JSON.stringify({
        sha256_hash: image.toString('hex'),
        chain_index: index,
        chain_hash: chainHash.toString('hex'),
        previous_hash: previous ? previous.toString('hex') : null,
        signature_hex: sign(null, image, this.privateKey).toString('hex'),
        public_key_hex: this.publicKeyHex,
      }),
    };
  }
}

function chainHashAt(device: DeviceChain, index: number): Buffer {
  const body = JSON.parse(device.bodies[index] ?? 'null') as { chain_hash: string } | null;
  if (!body) throw new Error(`device ${device.id} has no index ${index}`);
  return Buffer.from(body.chain_hash, 'hex');
}
