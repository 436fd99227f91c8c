/**
 * Ethereum addresses without ethers, so that functions which only publish the wallet address
 * (the trust-anchor document) stay small: keccak-256 of the uncompressed secp256k1 point's X‖Y,
 * last 20 bytes (Yellow Paper eq. 284), written with the EIP-55 mixed-case checksum.
 */
import { createPublicKey } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';

/** EIP-55: upper-case the hex letters whose nibble in keccak-256(lower-case hex address) is ≥ 8. */
export function checksumAddress(addressHex: string): string {
  const lower = addressHex.toLowerCase().replace(/^0x/, '');
  if (!/^[0-9a-f]{40}$/.test(lower)) throw new TypeError('an address is 20 bytes of hex');
  const hash = Buffer.from(keccak_256(new TextEncoder().encode(lower))).toString('hex');
  let out = '0x';
  for (let i = 0; i < 40; i++) out += parseInt(hash[i] ?? '0', 16) >= 8 ? (lower[i] ?? '').toUpperCase() : lower[i];
  return out;
}

/** The address of an uncompressed secp256k1 point (65 bytes, 04‖X‖Y). */
export function addressFromUncompressedPoint(point: Uint8Array): string {
  if (point.length !== 65 || point[0] !== 4) throw new Error('expected an uncompressed secp256k1 point (65 bytes, 0x04 first)');
  return checksumAddress(Buffer.from(keccak_256(point.subarray(1)).subarray(12)).toString('hex'));
}

/** The address of a secp256k1 private key (32 bytes of hex, with or without 0x). */
export function addressFromPrivateKey(privateKeyHex: string): string {
  const hex = privateKeyHex.replace(/^0x/, '');
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('a secp256k1 private key is 32 bytes of hex');
  return addressFromUncompressedPoint(secp256k1.getPublicKey(Buffer.from(hex, 'hex'), false));
}

/** The address of a secp256k1 SubjectPublicKeyInfo (DER, as KMS GetPublicKey returns it). */
export function addressFromSecp256k1Spki(spki: Uint8Array): string {
  const jwk = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' }).export({ format: 'jwk' });
  if (jwk.kty !== 'EC' || jwk.crv !== 'secp256k1' || !jwk.x || !jwk.y) throw new Error('the public key is not on secp256k1');
  return addressFromUncompressedPoint(Buffer.concat([Buffer.of(4), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]));
}
