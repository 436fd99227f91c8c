import { sha256Hex } from '../crypto/hash.js';
import { canonicalize } from '../crypto/jcs.js';
import { invalid } from '../errors.js';
import { checkChainHash, checkDeviceSignature } from './proof-check.js';

/** The device's side of an anchoring request (decisions.md "Device chains"), hashes lower-case hex. */
export interface DeviceProof {
  imageHash: string;
  chainIndex: number;
  chainHash: string;
  previousHash: string | null;
  signatureHex: string;
  publicKeyHex: string;
}

const ZERO_HASH = '0'.repeat(64);

/**
 * Device-side rules, checked before anything is written: the public key and signature are
 * well-formed and the signature verifies, index 0 has no previous hash and later indexes have one,
 * and chain_hash = SHA-256(prev || image_hash). Returns the normalised previous hash.
 */
export function checkDeviceProof(input: DeviceProof): string | null {
  if (!/^[0-9a-f]{64}$/.test(input.publicKeyHex)) {
    throw invalid('invalid_public_key', 'public_key_hex must be a 32-byte Ed25519 public key in hex (64 characters).');
  }
  if (!/^[0-9a-f]{128}$/.test(input.signatureHex)) {
    throw invalid('invalid_signature', 'signature_hex must be a 64-byte Ed25519 signature in hex (128 characters).');
  }
  let previous = input.previousHash;
  if (input.chainIndex === 0) {
    if (previous !== null && previous !== ZERO_HASH) {
      throw invalid('invalid_previous_hash', 'At chain_index 0, previous_hash must be null (the first entry has no predecessor).');
    }
    previous = null;
  } else if (previous === null) {
    throw invalid('invalid_previous_hash', `At chain_index ${input.chainIndex}, previous_hash must be the chain_hash of entry ${input.chainIndex - 1}.`);
  }
  // The same checks the verdict makes (proof-check.ts), here with the request's error codes.
  const chain = checkChainHash({ image_hash: input.imageHash, chain_index: input.chainIndex, chain_hash: input.chainHash, previous_hash: previous });
  if (!chain.ok) {
    throw invalid('invalid_chain_hash', 'chain_hash must be SHA-256(previous chain_hash, or 32 zero bytes at index 0, || image_hash) over raw bytes.', {
      expected_chain_hash: chain.expected,
    });
  }
  const signature = checkDeviceSignature({ image_hash: input.imageHash, public_key_hex: input.publicKeyHex, signature_hex: input.signatureHex });
  if (!signature.ok) {
    throw signature.unusableKey
      ? invalid('invalid_public_key', 'public_key_hex is not a valid Ed25519 public key.')
      : invalid('invalid_signature', 'The Ed25519 signature does not verify for this image_hash and public_key_hex.');
  }
  return previous;
}

/**
 * The fingerprint of an anchoring request: SHA-256 of the RFC 8785 form of everything that makes
 * it this request (the device's proof, the account, the API version). An identical retry has the
 * same fingerprint and resumes the anchor; any other request for the hash is another request.
 */
export function requestFingerprint(
  proof: DeviceProof & { deviceId?: string | undefined; accountId: string; apiVersion: 'v1' | 'v2' },
  previousHash: string | null,
): string {
  return sha256Hex(
    canonicalize({
      image_hash: proof.imageHash,
      chain_index: proof.chainIndex,
      chain_hash: proof.chainHash,
      previous_hash: previousHash,
      public_key_hex: proof.publicKeyHex,
      signature_hex: proof.signatureHex,
      device_id: proof.deviceId ?? null,
      account_id: proof.accountId,
      api_version: proof.apiVersion,
    }),
  );
}
