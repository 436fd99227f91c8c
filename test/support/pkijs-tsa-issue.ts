/**
 * Reference oracle for the byte-equality test of the embedded TSA: the pkijs/asn1js token builder
 * of lib/crypto/tsa/embedded.ts as it was before issuing moved to the DER writer
 * (lib/crypto/tsa/der-writer.ts). Same options, same checks, same structures; only the class is
 * renamed. It imports nothing of ours: its helpers (pkijs-common.ts, pkijs-chain.ts), its PKCS#8
 * signer (node:crypto) and the verifier of `verifyIssued` (pkijs-tsa-verify.ts) are written on the
 * libraries alone, so that the two builders share no code. Test-only.
 */
import { type KeyObject, createPrivateKey, createPublicKey, randomBytes, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { timeStampingUsageProblem, validateCertificateChain } from './pkijs-chain.js';
import { OID, certificateDer, compareDer, derToPem, digest, namedBitString, parseAsn1, parseCertificate, randomPositiveBigInt, toArrayBuffer } from './pkijs-common.js';
import { verifyTimestampResponse } from './pkijs-tsa-verify.js';

/** The TSA's key as the builder uses it (lib/crypto/tsa/key-signer.ts TsaKeySigner fits it). */
export interface TsaKeySigner {
  /** SignerInfo.signatureAlgorithm; NULL parameters for RSA (RFC 4055 §5), none for ECDSA (RFC 5758 §3.2). */
  readonly signatureAlgorithm: { oid: string; nullParameters: boolean };
  /** A signature over SHA-256(`data`): DER ECDSA-Sig-Value or PKCS#1 v1.5. */
  sign(data: Uint8Array): Promise<Uint8Array>;
}

/** The options of lib/crypto/tsa/embedded.ts EmbeddedTsa that the builder reads. */
export interface EmbeddedTsaOptions {
  tsaCertPem: string;
  tsaKeyPkcs8Pem?: string;
  keySigner?: TsaKeySigner;
  rootCertPem: string;
  policyOid: string;
  clock?: () => Date;
  serial?: () => bigint;
  includeRootCertificate?: boolean;
  includeTsaName?: boolean;
  verifyIssued?: boolean;
}

export interface EmbeddedTimestampRequest {
  imprint: Uint8Array;
  nonce?: bigint;
  certReq?: boolean;
}

export interface IssuedTimestamp {
  response: Uint8Array;
  genTime: Date;
  serial: string;
  policy: string;
}

export interface EmbeddedIssuedTimestamp extends IssuedTimestamp {
  nonce?: bigint;
  token: Uint8Array;
}

/** PKIFailureInfo bits (RFC 3161 §2.4.2). */
const PkiFailureInfo = { badAlg: 0, badRequest: 2, badDataFormat: 5, unacceptedPolicy: 15, unacceptedExtension: 16, systemFailure: 25 } as const;

/** An unencrypted PKCS#8 key (ECDSA or RSA) signing with SHA-256 in node:crypto (DER ECDSA-Sig-Value, PKCS#1 v1.5). */
function pkcs8Signer(pem: string): TsaKeySigner {
  const key = createPrivateKey(pem);
  const signatureAlgorithm =
    key.asymmetricKeyType === 'ec'
      ? { oid: '1.2.840.10045.4.3.2', nullParameters: false }
      : key.asymmetricKeyType === 'rsa'
        ? { oid: '1.2.840.113549.1.1.11', nullParameters: true }
        : undefined;
  if (!signatureAlgorithm) throw new Error(`unsupported TSA key type ${key.asymmetricKeyType ?? '?'} (ECDSA and RSA are supported)`);
  return { signatureAlgorithm, sign: async (data) => new Uint8Array(nodeSign('sha256', data, key)) };
}

/** Whether the signer holds the certificate's key: a challenge it signs verifies with the certificate's public key. */
async function signerMatchesCertificate(signer: TsaKeySigner, cert: pkijs.Certificate): Promise<boolean> {
  const challenge = randomBytes(32);
  try {
    const publicKey = createPublicKey({ key: Buffer.from(cert.subjectPublicKeyInfo.toSchema().toBER()), format: 'der', type: 'spki' });
    return nodeVerify('sha256', challenge, publicKey, await signer.sign(challenge));
  } catch {
    return false;
  }
}

/** Imprint lengths of the hash algorithms accepted in requests (RFC 3161 §2.4.1), as lib/crypto/tsa/embedded.ts. */
const IMPRINT_LENGTHS: Readonly<Record<string, number>> = { [OID.sha256]: 32, [OID.sha384]: 48, [OID.sha512]: 64 };
/** PKIStatus values (RFC 3161 §2.4.2). */
const STATUS_GRANTED = 0;
const STATUS_REJECTION = 2;

const OID_PATTERN = /^[0-2](\.(0|[1-9][0-9]*))+$/;

/** What signing needs, once the start-up checks passed. */
interface TsaMaterial {
  tsaCert: pkijs.Certificate;
  tsaCertDer: Uint8Array;
  rootCert: pkijs.Certificate;
  signer: TsaKeySigner;
}

/**
 * RFC 3161 TSA backed by a key held by the service (scheme `embedded`).
 *
 * Construction checks synchronously what it can (PEM syntax, the leaf's ExtendedKeyUsage) and
 * starts the asynchronous checks (key matches the leaf, leaf chains to the root); use
 * {@link EmbeddedTsa.create} to await them at start-up. A TSA whose checks fail never issues.
 */
export class PkijsEmbeddedTsa {
  readonly scheme = 'embedded' as const;
  /** The TSA policy OID written in tokens. */
  readonly policyOid: string;
  private readonly ready: Promise<TsaMaterial>;
  private readonly clock: () => Date;
  private readonly serialSource: () => bigint;
  private readonly options: EmbeddedTsaOptions;
  private readonly certificatesPem: string[];
  private readonly publicKey: KeyObject;

  /** @throws Error when the certificates or policy are unusable (see class doc). */
  constructor(options: EmbeddedTsaOptions) {
    if (!OID_PATTERN.test(options.policyOid)) throw new Error(`EmbeddedTsa: policyOid "${options.policyOid}" is not an OID`);
    if ((options.tsaKeyPkcs8Pem === undefined) === (options.keySigner === undefined)) {
      throw new Error('EmbeddedTsa: give exactly one of tsaKeyPkcs8Pem and keySigner');
    }
    this.options = options;
    this.policyOid = options.policyOid;
    const clock = options.clock ?? (() => new Date());
    this.clock = clock;
    this.serialSource = options.serial ?? (() => randomPositiveBigInt(128));
    const tsaCert = parseCertificate(options.tsaCertPem);
    const rootCert = parseCertificate(options.rootCertPem);
    const usage = timeStampingUsageProblem(tsaCert);
    if (usage) throw new Error(`TSA certificate refused: ${usage}`);
    this.certificatesPem = [derToPem(certificateDer(tsaCert)), derToPem(certificateDer(rootCert))];
    try {
      const spki = new Uint8Array(tsaCert.subjectPublicKeyInfo.toSchema().toBER());
      this.publicKey = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
    } catch {
      throw new Error('TSA certificate refused: its public key cannot be used');
    }
    this.ready = (async () => {
      // Only what signing needs: a root key passed along by mistake is never imported.
      const signer = options.keySigner ?? pkcs8Signer(options.tsaKeyPkcs8Pem ?? '');
      // The start-up checks of a TSA's own material (RFC 3161 §2.3 usage was checked above): the
      // key belongs to the leaf (one signature, verified with the leaf's public key: for a KMS key
      // this is one Sign call), and the leaf chains to the root now.
      if (!(await signerMatchesCertificate(signer, tsaCert))) {
        throw new Error('TSA certificate refused: the private key does not match the certificate');
      }
      const chain = await validateCertificateChain(tsaCert, { anchors: [rootCert], checkDate: clock() });
      if (!chain.ok) throw new Error(`TSA certificate refused: it does not chain to the root: ${chain.reason}`);
      return { tsaCert, tsaCertDer: certificateDer(tsaCert), rootCert, signer };
    })();
    // The failure is reported by create() or by the first timestamp(); never as an unhandled rejection.
    this.ready.catch(() => undefined);
  }

  /**
   * Creates a TSA and waits for its start-up checks.
   * @throws Error when the leaf cannot sign time-stamps, the key is not the leaf's, or the leaf does
   *   not chain to the root.
   */
  static async create(options: EmbeddedTsaOptions): Promise<PkijsEmbeddedTsa> {
    const tsa = new PkijsEmbeddedTsa(options);
    await tsa.ready;
    return tsa;
  }

  /** Time-stamps a SHA-256 imprint with a random 64-bit nonce and the certificates included. */
  async timestamp(sha256Imprint: Uint8Array): Promise<IssuedTimestamp> {
    const issued = await this.issue({ imprint: sha256Imprint, nonce: randomPositiveBigInt(64), certReq: true });
    return { response: issued.response, genTime: issued.genTime, serial: issued.serial, policy: issued.policy };
  }

  /**
   * Time-stamps a SHA-256 imprint with an explicit nonce and certReq flag (e.g. for a stand-alone
   * time-stamp endpoint). Returns a granted TimeStampResp.
   * @throws TypeError when the imprint is not 32 bytes; Error when the TSA failed its checks.
   */
  async issue(request: EmbeddedTimestampRequest): Promise<EmbeddedIssuedTimestamp> {
    if (!(request.imprint instanceof Uint8Array) || request.imprint.byteLength !== 32) {
      throw new TypeError('the imprint must be a 32-byte SHA-256 digest');
    }
    return this.sign(request.imprint, request.nonce, request.certReq ?? false);
  }

  /**
   * Answers a DER TimeStampReq with a DER TimeStampResp, as an RFC 3161 HTTP TSA would (§3.4).
   * Requests this TSA cannot honour get a `rejection` with the PKIFailureInfo bit RFC 3161 §2.4.2
   * names (badAlg for a non-SHA-256 imprint, unacceptedPolicy, unacceptedExtension, …). Never throws.
   */
  async respond(tsqDer: Uint8Array): Promise<Uint8Array> {
    let req: pkijs.TimeStampReq;
    try {
      req = new pkijs.TimeStampReq({ schema: parseAsn1(tsqDer, 'TimeStampReq') });
    } catch {
      return rejection(PkiFailureInfo.badDataFormat, 'the request is not a DER TimeStampReq');
    }
    if (req.version !== 1) return rejection(PkiFailureInfo.badRequest, 'only version 1 requests are supported');
    const alg = req.messageImprint.hashAlgorithm;
    const params = (alg as { algorithmParams?: unknown }).algorithmParams;
    const length = IMPRINT_LENGTHS[alg.algorithmId];
    if (length === undefined || (params !== undefined && !(params instanceof asn1js.Null))) {
      return rejection(PkiFailureInfo.badAlg, 'only SHA-256, SHA-384 and SHA-512 message imprints are accepted');
    }
    const imprint = new Uint8Array(req.messageImprint.hashedMessage.valueBlock.valueHexView);
    if (imprint.byteLength !== length) return rejection(PkiFailureInfo.badDataFormat, `the imprint's length does not match its hash algorithm (${length} bytes)`);
    // RFC 3161 §2.4.2: a requested policy we do not apply is refused with unacceptedPolicy.
    if (req.reqPolicy !== undefined && req.reqPolicy !== this.policyOid) {
      return rejection(PkiFailureInfo.unacceptedPolicy, `the requested policy is not supported; this TSA's policy is ${this.policyOid}`);
    }
    // RFC 3161 §2.4.1: unknown extensions, critical or not, make the TSA refuse.
    if (req.extensions && req.extensions.length > 0) {
      return rejection(PkiFailureInfo.unacceptedExtension, 'request extensions are not supported');
    }
    try {
      const issued = await this.sign(imprint, req.nonce?.toBigInt(), req.certReq ?? false, params !== undefined, alg.algorithmId);
      return issued.response;
    } catch {
      return rejection(PkiFailureInfo.systemFailure, 'the time-stamp could not be produced');
    }
  }

  /** The TSA certificate and its root, as PEM, leaf first. */
  async certificates(): Promise<string[]> {
    return [...this.certificatesPem];
  }

  /**
   * Verifies a fresh signature with the leaf's public key (RFC 5652 §5.4: over the DER of the
   * signed attributes, SET OF tag), so that a faulty signature never leaves the service.
   */
  private assertSignature(signerInfo: pkijs.SignerInfo | undefined): void {
    const attrs = signerInfo?.signedAttrs;
    if (!signerInfo || !attrs) throw new Error('the embedded TSA produced a token without signed attributes');
    const signed = new Uint8Array(attrs.toSchema().toBER());
    signed[0] = 0x31; // [0] IMPLICIT -> SET OF
    const signature = signerInfo.signature.valueBlock.valueHexView;
    if (!nodeVerify('sha256', signed, this.publicKey, signature)) {
      throw new Error('the embedded TSA produced a signature that does not verify with its certificate');
    }
  }

  private nextSerial(): bigint {
    const serial = this.serialSource();
    // RFC 3161 §2.4.2: serialNumber is a positive integer, unique per token.
    if (typeof serial !== 'bigint' || serial <= 0n) throw new RangeError('the serial source must return a positive bigint');
    return serial;
  }

  private async sign(imprint: Uint8Array, nonce: bigint | undefined, certReq: boolean, nullParams = true, hashOid: string = OID.sha256): Promise<EmbeddedIssuedTimestamp> {
    const loaded = await this.ready;
    const genTime = this.clock();
    const serial = this.nextSerial();
    const tsaCert = loaded.tsaCert;
    // A token whose genTime lies outside the certificates' validity would never verify
    // (RFC 5280 §6.1.3 (a)(2) at the time of stamping).
    for (const cert of [tsaCert, loaded.rootCert]) {
      if (genTime < cert.notBefore.value || genTime > cert.notAfter.value) {
        throw new Error(`the TSA certificate chain is not valid at ${genTime.toISOString()} (a certificate expired or is not yet valid)`);
      }
    }

    // RFC 3161 §2.4.2 TSTInfo.
    const tstInfo = new pkijs.TSTInfo({
      version: 1,
      policy: this.policyOid,
      messageImprint: new pkijs.MessageImprint({
        // RFC 5754 §2 allows absent or NULL parameters. NULL is what `openssl ts -query` writes,
        // and OpenSSL's -queryfile check compares the whole AlgorithmIdentifier; a request that
        // leaves them out gets the same form back (RFC 3161 §2.4.2: the same messageImprint).
        hashAlgorithm: new pkijs.AlgorithmIdentifier(
          nullParams ? { algorithmId: hashOid, algorithmParams: new asn1js.Null() } : { algorithmId: hashOid },
        ),
        hashedMessage: new asn1js.OctetString({ valueHex: toArrayBuffer(imprint) }),
      }),
      serialNumber: asn1js.Integer.fromBigInt(serial),
      // asn1js writes the milliseconds as a GeneralizedTime fraction without trailing zeros,
      // as RFC 3161 §2.4.2 requires.
      genTime,
      accuracy: new pkijs.Accuracy({ seconds: 1 }),
      // `ordering` is left out: it is DEFAULT FALSE, and DER omits default values (X.690 §11.5).
      ...(nonce !== undefined ? { nonce: asn1js.Integer.fromBigInt(nonce) } : {}),
      ...(this.options.includeTsaName !== false ? { tsa: new pkijs.GeneralName({ type: 4, value: tsaCert.subject }) } : {}),
    });
    const tstDer = new Uint8Array(tstInfo.toSchema().toBER());

    // RFC 5652 §5.3 signed attributes, RFC 5035 §5.4.1 signingCertificateV2.
    const attributes = [
      new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.ctTSTInfo })] }),
      new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: toArrayBuffer(digest('SHA-256', tstDer)) })] }),
      new pkijs.Attribute({ type: OID.signingCertificateV2, values: [signingCertificateV2(tsaCert, loaded.tsaCertDer)] }),
    ];
    // The signature covers the DER of the SET OF attributes, whose elements DER sorts (X.690 §11.6).
    attributes.sort((a, b) => compareDer(new Uint8Array(a.toSchema().toBER()), new Uint8Array(b.toSchema().toBER())));

    const certificates = certReq ? (this.options.includeRootCertificate === false ? [tsaCert] : [tsaCert, loaded.rootCert]) : undefined;
    const signedData = new pkijs.SignedData({
      version: 3, // RFC 5652 §5.1: eContentType is not id-data
      encapContentInfo: encapsulatedTstInfo(tstDer),
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1, // issuerAndSerialNumber (RFC 5652 §5.3)
          sid: new pkijs.IssuerAndSerialNumber({ issuer: tsaCert.issuer, serialNumber: tsaCert.serialNumber }),
          signedAttrs: new pkijs.SignedAndUnsignedAttributes({ type: 0, attributes }),
        }),
      ],
      // RFC 3161 §2.4.1: certificates only when certReq; otherwise the field MUST be absent.
      ...(certificates ? { certificates } : {}),
    });
    await signSignerInfo(signedData, loaded.signer);
    this.assertSignature(signedData.signerInfos[0]);

    const token = new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) });
    const tokenDer = new Uint8Array(token.toSchema().toBER());
    const response = new Uint8Array(
      new pkijs.TimeStampResp({
        status: new pkijs.PKIStatusInfo({ status: STATUS_GRANTED }),
        timeStampToken: token,
      })
        .toSchema()
        .toBER(),
    );

    if (this.options.verifyIssued === true) {
      const check = await verifyTimestampResponse(response, {
        imprint,
        roots: [this.certificatesPem[1] ?? ''],
        untrusted: [this.certificatesPem[0] ?? ''],
        hashAlgorithm: 'SHA-256',
        policy: this.policyOid,
        ...(nonce !== undefined ? { nonce } : {}),
      });
      if (!check.ok) {
        const failed = Object.entries(check.checks)
          .filter(([, c]) => c.result === 'fail')
          .map(([name, c]) => `${name}: ${c.reason}`);
        throw new Error(`the embedded TSA produced a token that does not verify (${failed.join('; ')})`);
      }
    }

    return {
      response,
      token: tokenDer,
      genTime,
      serial: serial.toString(10),
      policy: this.policyOid,
      ...(nonce !== undefined ? { nonce } : {}),
    };
  }
}

/**
 * Signs the one SignerInfo of `signedData` with `signer` (RFC 5652 §5.4): the signature covers the
 * DER of the signed attributes with the SET OF tag, and the digest algorithm is SHA-256 with NULL
 * parameters in both SignerInfo.digestAlgorithm and SignedData.digestAlgorithms (the form pkijs's
 * own `sign(key, 0, 'SHA-256')` wrote before the key could live in KMS).
 */
async function signSignerInfo(signedData: pkijs.SignedData, signer: TsaKeySigner): Promise<void> {
  const signerInfo = signedData.signerInfos[0];
  if (!signerInfo?.signedAttrs) throw new Error('the embedded TSA built a SignerInfo without signed attributes');
  const sha256 = () => new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256, algorithmParams: new asn1js.Null() });
  signedData.digestAlgorithms = [sha256()];
  signerInfo.digestAlgorithm = sha256();
  const { oid, nullParameters } = signer.signatureAlgorithm;
  signerInfo.signatureAlgorithm = new pkijs.AlgorithmIdentifier(nullParameters ? { algorithmId: oid, algorithmParams: new asn1js.Null() } : { algorithmId: oid });
  const signedAttrs = new Uint8Array(signerInfo.signedAttrs.toSchema().toBER());
  signedAttrs[0] = 0x31; // [0] IMPLICIT -> SET OF (RFC 5652 §5.4)
  signerInfo.signature = new asn1js.OctetString({ valueHex: toArrayBuffer(await signer.sign(signedAttrs)) });
}

/**
 * SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2, policies OPTIONAL }
 * ESSCertIDv2 ::= SEQUENCE { hashAlgorithm DEFAULT {id-sha256}, certHash, issuerSerial OPTIONAL }
 * (RFC 5035 §4). hashAlgorithm is SHA-256, the default, so DER leaves it out (X.690 §11.5).
 */
function signingCertificateV2(cert: pkijs.Certificate, certDer: Uint8Array): asn1js.Sequence {
  const issuerSerial = new asn1js.Sequence({
    value: [
      new asn1js.Sequence({ value: [new pkijs.GeneralName({ type: 4, value: cert.issuer }).toSchema()] }),
      new asn1js.Integer({ valueHex: toArrayBuffer(cert.serialNumber.valueBlock.valueHexView) }),
    ],
  });
  const essCertIdV2 = new asn1js.Sequence({
    value: [new asn1js.OctetString({ valueHex: toArrayBuffer(digest('SHA-256', certDer)) }), issuerSerial],
  });
  return new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertIdV2] })] });
}

/**
 * EncapsulatedContentInfo with the TSTInfo as a primitive OCTET STRING. pkijs's constructor turns
 * eContent into a constructed (BER) OCTET STRING; assigning it afterwards keeps the DER form.
 */
function encapsulatedTstInfo(tstDer: Uint8Array): pkijs.EncapsulatedContentInfo {
  const encap = new pkijs.EncapsulatedContentInfo({ eContentType: OID.ctTSTInfo });
  encap.eContent = new asn1js.OctetString({ valueHex: toArrayBuffer(tstDer) });
  return encap;
}

/** A TimeStampResp with status rejection, one PKIFailureInfo bit and a text (RFC 3161 §2.4.2). */
export function rejection(failBit: number, text: string): Uint8Array {
  const status = new pkijs.PKIStatusInfo({
    status: STATUS_REJECTION,
    statusStrings: [new asn1js.Utf8String({ value: text })],
    failInfo: namedBitString([failBit]),
  });
  return new Uint8Array(new pkijs.TimeStampResp({ status }).toSchema().toBER());
}
