/**
 * The time-stamping the RFC 4998 archive needs (lib/evidence/archive.ts ArchiveStamper), over the
 * service's TSA through its public API only: SHA-256 imprints through TimestampAuthority.timestamp;
 * SHA-384 and SHA-512 (a hash-tree renewal to a longer hash) through the embedded TSA's RFC 3161
 * request handling (EmbeddedTsa.respond, the same code as POST /api/v2/tsa). Every token is checked
 * against the TSA's root before it is used, and every call has a deadline. It also names the
 * certificate the TSA signs with now and the one that signed a token (for the renewal of the
 * records under a retired certificate).
 */
import { createHash, randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import { ERS_HASH_OIDS, type ErsHash } from './ers.js';
import type { TimestampAuthority } from './ports.js';
import { EmbeddedTsa, extractTimestampToken, parseCertificate, timestampSigner, verifyTimestampToken } from './tsa/index.js';
import { certificatesFromPem } from './tsa/x509-verify.js';

export interface StampedToken {
  token: Uint8Array;
  genTime: Date;
  tsaNotAfter: Date;
}

export class ArchiveStampError extends Error {}

export function createArchiveStamper(
  tsa: TimestampAuthority,
  timeoutMs: number,
): {
  stamp(alg: ErsHash, digest: Uint8Array): Promise<StampedToken>;
  current(): Promise<{ notAfter: Date; sha256: string }>;
  signerOf(token: Uint8Array): { sha256: string; notAfter: Date } | undefined;
} {
  return {
    stamp: (alg, digest) => withDeadline(stamp(tsa, alg, digest), timeoutMs),
    // The TSA's certificate chain, leaf first (a remote TSA's is fetched: the same deadline).
    current: async () => {
      const [leaf] = await withDeadline(tsa.certificates(), timeoutMs);
      const cert = leaf ? certificatesFromPem(leaf)[0] : undefined;
      if (!cert) throw new ArchiveStampError('the TSA names no certificate');
      // The SHA-256 of its DER: how the TSA history (lib/crypto/tsa/history.ts) names a certificate.
      return { notAfter: cert.notAfter, sha256: createHash('sha256').update(cert.der).digest('hex') };
    },
    // The token's signer among the certificates it carries (every archive token asks for them).
    signerOf: (token) => {
      try {
        return timestampSigner(token);
      } catch {
        return undefined;
      }
    },
  };
}

async function stamp(tsa: TimestampAuthority, alg: ErsHash, digest: Uint8Array): Promise<StampedToken> {
  let response: Uint8Array;
  if (alg === 'SHA-256') {
    response = (await tsa.timestamp(digest)).response;
  } else if ((alg === 'SHA-384' || alg === 'SHA-512') && tsa instanceof EmbeddedTsa) {
    response = await tsa.respond(timeStampRequest(alg, digest));
  } else {
    throw new ArchiveStampError(`the ${tsa.scheme} TSA cannot time-stamp a ${alg} imprint here`);
  }
  const token = extractTimestampToken(response);
  const chain = await tsa.certificates();
  const v = await verifyTimestampToken(token, { imprint: digest, roots: chain.slice(-1), untrusted: chain.slice(0, -1), hashAlgorithm: alg === 'SHA-256' || alg === 'SHA-384' || alg === 'SHA-512' ? alg : 'SHA-256' });
  if (!v.ok || !v.genTime || !v.tsaCertificatePem) {
    const failed = Object.entries(v.checks).filter(([, o]) => o.result === 'fail').map(([k, o]) => `${k}: ${o.reason}`);
    throw new ArchiveStampError(`the TSA's token did not verify: ${v.malformed ?? failed.join('; ')}`);
  }
  return { token, genTime: v.genTime, tsaNotAfter: parseCertificate(v.tsaCertificatePem).notAfter.value };
}

/**
 * A DER TimeStampReq (RFC 3161 §2.4.1): version 1, the imprint, a 64-bit nonce, certReq true.
 * The nonce's first byte is 0x01–0x7f: positive, and minimal as DER requires (a first byte 0x00
 * before one below 0x80 is not DER, and the TSA rejects the request: 1 in 256 random nonces did).
 */
export function timeStampRequest(alg: ErsHash, digest: Uint8Array, random: Uint8Array = randomBytes(8)): Uint8Array {
  const nonce = Uint8Array.from(random);
  nonce[0] = 1 + ((nonce[0] ?? 0) % 0x7f);
  const req = new asn1js.Sequence({
    value: [
      new asn1js.Integer({ value: 1 }),
      new asn1js.Sequence({
        value: [new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: ERS_HASH_OIDS[alg] })] }), new asn1js.OctetString({ valueHex: digest })],
      }),
      new asn1js.Integer({ valueHex: nonce }),
      new asn1js.Boolean({ value: true }),
    ],
  });
  return new Uint8Array(req.toBER(false));
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ArchiveStampError(`the TSA did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
