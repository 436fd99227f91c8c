/**
 * Throw-away C2PA signers for the tests, made with pkijs and WebCrypto: a root CA (the reader's
 * `manifest` anchor) and end-entity certificates under it, on C2PA's profile by default (P-256,
 * keyUsage digitalSignature, extendedKeyUsage emailProtection, authorityKeyIdentifier) or off it
 * in one chosen way, for the refusals.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { namedBitString, toArrayBuffer } from '../../lib/crypto/tsa/asn1.js';
import { buildCertificate, buildName, type CertificateSpec, certificateDer, extension, keyIdentifier, rootCaExtensions } from '../../lib/crypto/tsa/certificates.js';
import { OID } from '../../lib/crypto/tsa/identifiers.js';
import { derToPem } from '../../lib/crypto/tsa/pem.js';

const subtle = globalThis.crypto.subtle;
const EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4';

export interface SignerRoot {
  certPem: string;
  cert: pkijs.Certificate;
  key: CryptoKey;
}

export interface LeafOptions {
  commonName?: string;
  notBefore?: Date;
  notAfter?: Date;
  /** keyUsage bits (RFC 5280 §4.2.1.3); default [0] digitalSignature; null: no keyUsage. */
  keyUsage?: number[] | null;
  /** extendedKeyUsage OIDs; default emailProtection; null: none. */
  eku?: string[] | null;
  /** basicConstraints cA TRUE. */
  ca?: boolean;
  /** The key's curve (default P-256). */
  curve?: 'P-256' | 'P-384';
}

export interface Leaf {
  certPem: string;
  keyPem: string;
  notAfter: Date;
}

export async function makeSignerRoot(commonName = 'Test C2PA Root'): Promise<SignerRoot> {
  const keys = (await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const name = buildName({ organization: 'Evidence tests', commonName });
  const cert = await certificate({ subject: name, issuer: name, publicKey: keys.publicKey, signingKey: keys.privateKey, notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + 10 * 365 * 86_400_000), extensions: rootCaExtensions });
  return { certPem: derToPem(certificateDer(cert)), cert, key: keys.privateKey };
}

export async function makeLeaf(root: SignerRoot, options: LeafOptions = {}): Promise<Leaf> {
  const keys = (await subtle.generateKey({ name: 'ECDSA', namedCurve: options.curve ?? 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const rootSki = keyIdentifier(root.cert);
  const notAfter = options.notAfter ?? new Date(Date.now() + 365 * 86_400_000);
  const cert = await certificate({
    subject: buildName({ organization: 'Evidence tests', commonName: options.commonName ?? 'Test Photographer' }),
    issuer: root.cert.subject,
    publicKey: keys.publicKey,
    signingKey: root.key,
    notBefore: options.notBefore ?? new Date(Date.now() - 3_600_000),
    notAfter,
    extensions: (ski) => [
      extension(OID.basicConstraints, true, new asn1js.Sequence({ value: options.ca ? [new asn1js.Boolean({ value: true })] : [] })),
      ...(options.keyUsage === null ? [] : [extension(OID.keyUsage, true, namedBitString(options.keyUsage ?? [0]))]),
      extension(OID.subjectKeyIdentifier, false, new asn1js.OctetString({ valueHex: toArrayBuffer(ski) })),
      extension(OID.authorityKeyIdentifier, false, new asn1js.Sequence({ value: [new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 0 }, valueHex: toArrayBuffer(rootSki) })] })),
      ...(options.eku === null ? [] : [extension(OID.extKeyUsage, false, new asn1js.Sequence({ value: (options.eku ?? [EMAIL_PROTECTION]).map((p) => new asn1js.ObjectIdentifier({ value: p })) }))]),
    ],
  });
  const keyPem = derToPem(new Uint8Array(await subtle.exportKey('pkcs8', keys.privateKey)), 'PRIVATE KEY');
  return { certPem: derToPem(certificateDer(cert)), keyPem, notAfter };
}

/** Writes a leaf as `<name>.pem` and `<name>.key` (0600) in `dir`; returns the paths. */
export function writeLeaf(dir: string, name: string, leaf: Leaf): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  writeFileSync(cert, leaf.certPem);
  writeFileSync(key, leaf.keyPem, { mode: 0o600 });
  chmodSync(key, 0o600);
  return { cert, key };
}

async function certificate(spec: CertificateSpec): Promise<pkijs.Certificate> {
  const cert = await buildCertificate(spec);
  // Re-read from DER so that certificateDer() gives the bytes as signed.
  return new pkijs.Certificate({ schema: asn1js.fromBER(cert.toSchema().toBER(false)).result });
}
