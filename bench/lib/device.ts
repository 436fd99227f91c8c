/**
 * A device as the mobile app is one (test/support/client.ts's Device, without the test helpers'
 * imports so the load generator stays small): an Ed25519 key and its hash chain, producing the
 * signed body of POST /api/v2/evidence/anchor for each next link.
 */
import { createPrivateKey, randomBytes, sign } from 'node:crypto';
import { ed25519PublicKeyFromSeed } from '../../lib/crypto/ed25519.js';
import { computeChainHash } from '../../lib/crypto/hash.js';

/** PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface AnchorBody {
  sha256_hash: string;
  chain_index: number;
  chain_hash: string;
  previous_hash: string | null;
  signature_hex: string;
  public_key_hex: string;
}

export class BenchDevice {
  readonly seed = randomBytes(32);
  readonly publicKeyHex = Buffer.from(ed25519PublicKeyFromSeed(this.seed)).toString('hex');
  /** The key object made once (lib/crypto/ed25519.ts signEd25519 makes one per signature). */
  private readonly key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, this.seed]), format: 'der', type: 'pkcs8' });
  private index = 0;
  private previous: string | null = null;

  /** The next link's body (a fresh random image hash), assuming every earlier one was anchored. */
  next(): AnchorBody {
    const imageHash = randomBytes(32).toString('hex');
    const chainHash = computeChainHash(this.previous, imageHash);
    const body: AnchorBody = {
      sha256_hash: imageHash,
      chain_index: this.index,
      chain_hash: chainHash,
      previous_hash: this.previous,
      signature_hex: sign(null, Buffer.from(imageHash, 'hex'), this.key).toString('hex'),
      public_key_hex: this.publicKeyHex,
    };
    this.previous = chainHash;
    this.index += 1;
    return body;
  }

  /** `n` consecutive links, pre-signed. */
  chain(n: number): AnchorBody[] {
    return Array.from({ length: n }, () => this.next());
  }
}
