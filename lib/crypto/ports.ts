/**
 * Ports of the crypto adapters. The domain (lib/evidence) depends only on these shapes;
 * the scheme behind each (local key, KMS, remote TSA) is a configuration value.
 */

/** A post-quantum signer: ML-DSA-65 (FIPS 204), pure, empty context. */
export interface PqSigner {
  readonly algorithm: 'ML-DSA-65';
  /** Stable identifier of the key: `mldsa65:` + first 16 hex chars of SHA-256(public key). */
  readonly keyId: string;
  /** Raw public key, 1952 bytes (FIPS 204 pkEncode). */
  publicKey(): Promise<Uint8Array>;
  /** Signature over `message`, 3309 bytes. */
  sign(message: Uint8Array): Promise<Uint8Array>;
}

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
