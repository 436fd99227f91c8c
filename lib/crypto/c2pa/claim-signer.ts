/**
 * The callback signer the official C2PA builder takes (`{sign, reserveSize, alg}`): it signs the
 * claim with ES256 (ECDSA P-256 with SHA-256, the signature as r‖s, RFC 9053 §2.1) and hands
 * the signature to a time-stamping authority as the v2 time-stamp asks (cose-sign1.ts), then
 * returns the whole COSE_Sign1, exactly `reserveSize` bytes long.
 */
import { type KeyObject, X509Certificate, createHash, createPublicKey, sign } from 'node:crypto';
import { claimToBeSigned, coseSign1, protectedHeader, timestampToBeStamped } from './cose-sign1.js';

/** What the builder calls. */
export interface C2paCallbackSigner {
  alg: 'es256';
  reserveSize: number;
  sign(claim: Uint8Array): Promise<Uint8Array>;
}

export interface ClaimSignerOptions {
  /** The signer's certificate and its intermediates, DER, leaf first (the root is the reader's anchor, not sent). */
  chainDer: readonly Uint8Array[];
  /** The leaf's private key (EC P-256). */
  privateKey: KeyObject;
  /**
   * Time-stamps a SHA-256 message imprint (RFC 3161) and returns the DER TimeStampToken. Absent:
   * no `sigTst2` (a claim the reader judges by the current time alone; the tests' control case).
   */
  timestamp?: (sha256Imprint: Uint8Array) => Promise<Uint8Array>;
  /** Called with each signature's COSE_Sign1 as it is handed to the builder (for the tests' checks). */
  onSignature?: (cose: Uint8Array, parts: { signature: Uint8Array; timestampToken?: Uint8Array }) => void;
}

/**
 * Bytes reserved for the signature box beyond the certificates: the ES256 signature (64), the
 * COSE framing and headers (1 KiB) and a time-stamp token with its certificates (10,000, what
 * c2pa-rs reserves for one; ours is about 1.5 KB). The box is padded to exactly this length.
 */
const FRAMING_RESERVE = 1024;
const TIMESTAMP_RESERVE = 10_000;

export function claimSigner(options: ClaimSignerOptions): C2paCallbackSigner {
  const certificates = options.chainDer.reduce((n, c) => n + c.length, 0);
  const reserveSize = 64 + certificates + FRAMING_RESERVE + (options.timestamp ? TIMESTAMP_RESERVE : 0);
  const protectedBytes = protectedHeader('ES256', options.chainDer);
  return {
    alg: 'es256',
    reserveSize,
    async sign(claim) {
      const signature = new Uint8Array(sign('sha256', claimToBeSigned(protectedBytes, claim), { key: options.privateKey, dsaEncoding: 'ieee-p1363' }));
      const timestampToken = options.timestamp
        ? await options.timestamp(new Uint8Array(createHash('sha256').update(timestampToBeStamped(protectedBytes, signature)).digest()))
        : undefined;
      const cose = coseSign1({ protectedBytes, signature, ...(timestampToken ? { timestampToken } : {}), size: reserveSize });
      options.onSignature?.(cose, { signature, ...(timestampToken ? { timestampToken } : {}) });
      return cose;
    },
  };
}

/** Whether the private key is the one the certificate (DER) certifies. */
export function keyFitsCertificate(privateKey: KeyObject, certificateDer: Uint8Array): boolean {
  const certified = new X509Certificate(certificateDer).publicKey.export({ format: 'der', type: 'spki' });
  const held = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return certified.equals(held);
}
