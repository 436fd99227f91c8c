/**
 * Test-only builders of RFC 3161 material that the embedded TSA refuses to make: certificate
 * chains made with the openssl CLI (RSA, RSA-PSS, P-384, Ed25519 keys, intermediates, EKU
 * variants) and time-stamp responses signed with any of those keys (pkijs for the structures,
 * node:crypto for the signature), in the same shape as lib/crypto/tsa/embedded.ts.
 */
import { spawnSync } from 'node:child_process';
import { type KeyObject, createPrivateKey, createHash, sign as nodeSign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
// The oracles' own identifiers (test/support/pkijs-common.ts), never lib/'s.
import { OID as OIDS } from '../support/pkijs-common.js';

const OPENSSL = '/usr/bin/openssl';


export type KeyKind = 'rsa' | 'rsa-pss' | 'p256' | 'p384' | 'ed25519';
export type Hash = 'sha1' | 'sha256' | 'sha384' | 'sha512';

function openssl(args: string[], input?: string): string {
  const r = spawnSync(OPENSSL, args, { encoding: 'utf8', input });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const KEYGEN: Record<KeyKind, string[]> = {
  rsa: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
  'rsa-pss': ['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048'],
  p256: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  p384: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  ed25519: ['-algorithm', 'ED25519'],
};

/** One certificate with its PKCS#8 key, as PEM. */
export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

/** What to put in a certificate made by {@link makeCertificate}. */
export interface CertSpec {
  subject: string;
  key: KeyKind;
  /** The issuer; absent: self-signed. */
  issuer?: CertAndKey;
  /** openssl x509v3 extension lines (RFC 5280 §4.2). */
  extensions: string[];
  /** Validity as openssl dates (YYYYMMDDHHMMSSZ); default now - 1 day to now + 365 days. */
  notBefore?: string;
  notAfter?: string;
  /** Digest of the issuer's signature (ignored for Ed25519). Default sha256. */
  digest?: Hash;
  /** Serial number in hex (default: 15 random octets). */
  serialHex?: string;
}

export const CA_EXTENSIONS = ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign', 'subjectKeyIdentifier=hash'];
export const TSA_EXTENSIONS = [
  'basicConstraints=critical,CA:FALSE',
  'keyUsage=critical,digitalSignature,nonRepudiation',
  'extendedKeyUsage=critical,timeStamping',
  'subjectKeyIdentifier=hash',
  'authorityKeyIdentifier=keyid',
];

function opensslDate(d: Date): string {
  return `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}

/** Makes a certificate with `openssl ca` (explicit validity dates; OpenSSL 3.0's x509 has none). */
export function makeCertificate(spec: CertSpec): CertAndKey {
  const dir = mkdtempSync(path.join(tmpdir(), 'tsa-cert-'));
  try {
    const keyPath = path.join(dir, 'key.pem');
    openssl(['genpkey', ...KEYGEN[spec.key], '-out', keyPath]);
    const csrPath = path.join(dir, 'req.csr');
    openssl(['req', '-new', '-key', keyPath, '-subj', spec.subject, '-out', csrPath]);
    writeFileSync(path.join(dir, 'index.txt'), '');
    writeFileSync(path.join(dir, 'serial'), `${spec.serialHex ?? createHash('sha256').update(`${spec.subject}${Math.random()}`).digest('hex').slice(0, 30)}\n`);
    const cnf = path.join(dir, 'ca.cnf');
    writeFileSync(
      cnf,
      [
        '[ca]', 'default_ca = dflt',
        '[dflt]', `database = ${dir}/index.txt`, `new_certs_dir = ${dir}`, `serial = ${dir}/serial`,
        'policy = any', 'unique_subject = no', 'email_in_dn = no', 'default_md = default',
        '[any]', 'countryName = optional', 'organizationName = optional', 'commonName = supplied',
        '[ext]', ...spec.extensions, '',
      ].join('\n'),
    );
    const certPath = path.join(dir, 'cert.pem');
    const now = Date.now();
    const issuerArgs: string[] = ['-keyfile', keyPath, '-selfsign'];
    let issuerKeyType = createPrivateKey(readFileSync(keyPath, 'utf8')).asymmetricKeyType;
    if (spec.issuer) {
      const caCert = path.join(dir, 'ca.pem');
      const caKey = path.join(dir, 'ca.key');
      writeFileSync(caCert, spec.issuer.certPem);
      writeFileSync(caKey, spec.issuer.keyPem);
      issuerArgs.splice(0, issuerArgs.length, '-cert', caCert, '-keyfile', caKey);
      issuerKeyType = createPrivateKey(spec.issuer.keyPem).asymmetricKeyType;
    }
    openssl([
      'ca', '-batch', '-notext', '-config', cnf, '-in', csrPath, '-out', certPath, ...issuerArgs,
      '-startdate', spec.notBefore ?? opensslDate(new Date(now - 86_400_000)),
      '-enddate', spec.notAfter ?? opensslDate(new Date(now + 365 * 86_400_000)),
      '-extensions', 'ext',
      '-md', issuerKeyType === 'ed25519' ? 'default' : (spec.digest ?? 'sha256'),
    ]);
    return { certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What {@link buildResponse} signs. */
export interface TokenSpec {
  signer: CertAndKey;
  /** Certificates embedded in the token (PEM); default: the signer's. */
  certificates?: string[];
  imprint: Uint8Array;
  imprintHash?: Hash;
  genTime?: Date;
  policy?: string;
  nonce?: bigint;
  /** Include the tsa name (the signer's subject). Default true. */
  tsaName?: boolean;
  /** Signing-certificate attribute: v2 (SHA-256, RFC 5035), v1 (SHA-1, RFC 2634), both or none. */
  ess?: 'v1' | 'v2' | 'both' | 'none';
  /** SignerIdentifier: issuerAndSerialNumber (default) or subjectKeyIdentifier. */
  sid?: 'issuerSerial' | 'ski';
  /** SignerInfo digest algorithm (and the hash of the signature, except Ed25519). Default sha256. */
  digest?: Hash;
  /** For RSA keys: write rsaEncryption instead of shaXWithRSAEncryption (RFC 3370 §3.2). */
  rsaEncryptionOid?: boolean;
}

const HASH_OID: Record<Hash, string> = { sha1: OIDS.sha1, sha256: OIDS.sha256, sha384: OIDS.sha384, sha512: OIDS.sha512 };
const RSA_SIG: Record<Hash, string> = { sha1: '1.2.840.113549.1.1.5', sha256: '1.2.840.113549.1.1.11', sha384: '1.2.840.113549.1.1.12', sha512: '1.2.840.113549.1.1.13' };
const ECDSA_SIG: Record<Hash, string> = { sha1: '1.2.840.10045.4.1', sha256: '1.2.840.10045.4.3.2', sha384: '1.2.840.10045.4.3.3', sha512: '1.2.840.10045.4.3.4' };

function ab(bytes: Uint8Array): ArrayBuffer {
  return Uint8Array.from(bytes).buffer;
}

function pemDer(pem: string): Uint8Array {
  const body = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(pem)?.[1] ?? '';
  return new Uint8Array(Buffer.from(body.replace(/\s+/g, ''), 'base64'));
}

function certOf(pem: string): pkijs.Certificate {
  return pkijs.Certificate.fromBER(ab(pemDer(pem)));
}

function hashAlg(h: Hash): pkijs.AlgorithmIdentifier {
  return new pkijs.AlgorithmIdentifier({ algorithmId: HASH_OID[h], algorithmParams: new asn1js.Null() });
}

/** signatureAlgorithm and the signing function for a key (RFC 4055, RFC 5758, RFC 8419). */
function signatureFor(key: KeyObject, digest: Hash, rsaEncryptionOid: boolean): { alg: pkijs.AlgorithmIdentifier; sign: (data: Uint8Array) => Uint8Array } {
  const type = key.asymmetricKeyType;
  if (type === 'ed25519') {
    return { alg: new pkijs.AlgorithmIdentifier({ algorithmId: '1.3.101.112' }), sign: (d) => new Uint8Array(nodeSign(null, d, key)) };
  }
  if (type === 'ec') {
    return { alg: new pkijs.AlgorithmIdentifier({ algorithmId: ECDSA_SIG[digest] }), sign: (d) => new Uint8Array(nodeSign(digest, d, key)) };
  }
  if (type === 'rsa-pss') {
    const saltLength = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }[digest];
    const params = new pkijs.RSASSAPSSParams({
      hashAlgorithm: hashAlg(digest),
      maskGenAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: '1.2.840.113549.1.1.8', algorithmParams: hashAlg(digest).toSchema() }),
      saltLength,
    });
    return {
      alg: new pkijs.AlgorithmIdentifier({ algorithmId: '1.2.840.113549.1.1.10', algorithmParams: params.toSchema() }),
      sign: (d) => new Uint8Array(nodeSign(digest, d, { key, padding: 6 /* RSA_PKCS1_PSS_PADDING */, saltLength })),
    };
  }
  const oid = rsaEncryptionOid ? '1.2.840.113549.1.1.1' : RSA_SIG[digest];
  return { alg: new pkijs.AlgorithmIdentifier({ algorithmId: oid, algorithmParams: new asn1js.Null() }), sign: (d) => new Uint8Array(nodeSign(digest, d, key)) };
}

function essAttribute(cert: pkijs.Certificate, der: Uint8Array, v2: boolean): pkijs.Attribute {
  const issuerSerial = new asn1js.Sequence({
    value: [
      new asn1js.Sequence({ value: [new pkijs.GeneralName({ type: 4, value: cert.issuer }).toSchema()] }),
      new asn1js.Integer({ valueHex: ab(cert.serialNumber.valueBlock.valueHexView) }),
    ],
  });
  const hash = new Uint8Array(createHash(v2 ? 'sha256' : 'sha1').update(der).digest());
  const id = new asn1js.Sequence({ value: [new asn1js.OctetString({ valueHex: ab(hash) }), issuerSerial] });
  return new pkijs.Attribute({
    type: v2 ? OIDS.signingCertificateV2 : OIDS.signingCertificate,
    values: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [id] })] })],
  });
}

function compareDer(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** A granted TimeStampResp signed by `spec.signer` (RFC 3161 §2.4.2, RFC 5652 §5). */
export function buildResponse(spec: TokenSpec): Uint8Array {
  const signerDer = pemDer(spec.signer.certPem);
  const signer = certOf(spec.signer.certPem);
  const key = createPrivateKey(spec.signer.keyPem);
  const digest = spec.digest ?? 'sha256';
  const genTime = spec.genTime ?? new Date();

  const tstInfo = new pkijs.TSTInfo({
    version: 1,
    policy: spec.policy ?? '1.3.6.1.4.1.99999.7',
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: hashAlg(spec.imprintHash ?? 'sha256'),
      hashedMessage: new asn1js.OctetString({ valueHex: ab(spec.imprint) }),
    }),
    serialNumber: new asn1js.Integer({ value: Math.floor(Math.random() * 1e9) + 1 }),
    genTime,
    accuracy: new pkijs.Accuracy({ seconds: 1 }),
    ...(spec.nonce !== undefined ? { nonce: asn1js.Integer.fromBigInt(spec.nonce) } : {}),
    ...(spec.tsaName !== false ? { tsa: new pkijs.GeneralName({ type: 4, value: signer.subject }) } : {}),
  });
  const tstDer = new Uint8Array(tstInfo.toSchema().toBER());

  const attributes = [
    new pkijs.Attribute({ type: OIDS.contentType, values: [new asn1js.ObjectIdentifier({ value: OIDS.ctTSTInfo })] }),
    new pkijs.Attribute({
      type: OIDS.messageDigest,
      values: [new asn1js.OctetString({ valueHex: ab(new Uint8Array(createHash(digest).update(tstDer).digest())) })],
    }),
  ];
  const ess = spec.ess ?? 'v2';
  if (ess === 'v2' || ess === 'both') attributes.push(essAttribute(signer, signerDer, true));
  if (ess === 'v1' || ess === 'both') attributes.push(essAttribute(signer, signerDer, false));
  attributes.sort((a, b) => compareDer(new Uint8Array(a.toSchema().toBER()), new Uint8Array(b.toSchema().toBER())));

  let sid: pkijs.IssuerAndSerialNumber | asn1js.Primitive;
  if (spec.sid === 'ski') {
    const ski = signer.extensions?.find((e) => e.extnID === '2.5.29.14')?.parsedValue as asn1js.OctetString | undefined;
    if (!ski) throw new Error('the signer certificate has no subjectKeyIdentifier');
    sid = new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 0 }, valueHex: ab(ski.valueBlock.valueHexView) });
  } else {
    sid = new pkijs.IssuerAndSerialNumber({ issuer: signer.issuer, serialNumber: signer.serialNumber });
  }
  const encap = new pkijs.EncapsulatedContentInfo({ eContentType: OIDS.ctTSTInfo });
  encap.eContent = new asn1js.OctetString({ valueHex: ab(tstDer) });
  const { alg, sign } = signatureFor(key, digest, spec.rsaEncryptionOid === true);
  const signerInfo = new pkijs.SignerInfo({
    version: spec.sid === 'ski' ? 3 : 1,
    sid,
    digestAlgorithm: hashAlg(digest),
    signatureAlgorithm: alg,
    signedAttrs: new pkijs.SignedAndUnsignedAttributes({ type: 0, attributes }),
  });
  const signed = new Uint8Array(signerInfo.signedAttrs?.toSchema().toBER() ?? new ArrayBuffer(0));
  signed[0] = 0x31;
  signerInfo.signature = new asn1js.OctetString({ valueHex: ab(sign(signed)) });

  const certificates = (spec.certificates ?? [spec.signer.certPem]).map(certOf);
  const signedData = new pkijs.SignedData({
    version: 3,
    digestAlgorithms: [hashAlg(digest)],
    encapContentInfo: encap,
    signerInfos: [signerInfo],
    ...(certificates.length > 0 ? { certificates } : {}),
  });
  const token = new pkijs.ContentInfo({ contentType: OIDS.signedData, content: signedData.toSchema(true) });
  return new Uint8Array(
    new pkijs.TimeStampResp({ status: new pkijs.PKIStatusInfo({ status: 0 }), timeStampToken: token }).toSchema().toBER(),
  );
}
