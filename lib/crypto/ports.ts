/**
 * Ports of the crypto adapters. The domain (lib/evidence) depends only on these shapes;
 * the scheme behind each (local key, KMS, remote TSA) is a configuration value.
 */

/**
 * A service signing key, whatever the algorithm (sigstore's one signer shape): the scheme behind
 * it (a local key in DATA_DIR, a KMS key) is a configuration value.
 */
export interface Signer<A extends string> {
  readonly algorithm: A;
  /** Stable identifier of the key: algorithm prefix + first 16 hex chars of SHA-256(public key). */
  readonly keyId: string;
  /** The raw public key. */
  publicKey(): Promise<Uint8Array>;
  /** A signature over `message`. */
  sign(message: Uint8Array): Promise<Uint8Array>;
}

/** A post-quantum signer: ML-DSA-65 (FIPS 204), pure, empty context; keyId `mldsa65:…`, public key 1952 bytes, signature 3309 bytes. */
export type PqSigner = Signer<'ML-DSA-65'>;

/** The service's Ed25519 signer (RFC 8032 §5.1, pure Ed25519); keyId `ed25519:…`, public key 32 bytes, signature 64 bytes. */
export type Ed25519Signer = Signer<'Ed25519'>;

/** What a time-stamping authority returns for one request. */
export interface IssuedTimestamp {
  /** DER of the whole TimeStampResp (RFC 3161 §2.4.2): `openssl ts -verify -in` reads it as is. */
  response: Uint8Array;
  /** genTime of the TSTInfo. */
  genTime: Date;
  /** serialNumber of the TSTInfo, as decimal string. */
  serial: string;
  /** TSA policy OID of the TSTInfo. */
  policy: string;
}

/** RFC 3161 time-stamping authority (embedded, with our own DER writer, or remote over HTTP). */
export interface TimestampAuthority {
  readonly scheme: 'embedded' | 'remote';
  /**
   * Time-stamps a SHA-256 message imprint (32 bytes). The reply is fully checked before it is
   * returned (status, imprint, nonce, signature, ESSCertIDv2, EKU, chain to the trusted roots).
   */
  timestamp(sha256Imprint: Uint8Array): Promise<IssuedTimestamp>;
  /** The TSA certificate chain as PEM, leaf first, root last. */
  certificates(): Promise<string[]>;
}
