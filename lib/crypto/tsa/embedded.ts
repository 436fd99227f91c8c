/**
 * The embedded RFC 3161 time-stamping authority: signs TSTInfo structures with the TSA key held by
 * the service, in tokens that `openssl ts -verify` accepts.
 *
 * Tokens are written with the DER writer (der-writer.ts) and requests read with the strict DER
 * reader (der.ts, in tsa-request.ts): building a token with pkijs/asn1js objects cost ~2 ms of CPU,
 * most of a token's price. Every part of a token that is the same for all tokens of this TSA
 * (names, serial number and hash of the certificate, the certificates themselves, algorithm
 * identifiers) is encoded once at construction (token-parts.ts). The certificates' own bytes are
 * used as they are, never re-encoded.
 */
import { type KeyObject, createPublicKey, verify as nodeVerify } from 'node:crypto';
import type { IssuedTimestamp, TimestampAuthority } from '../ports.js';
import { randomPositiveBigInt } from './asn1.js';
import { certificateDer, importPrivateKey, parseCertificate } from './certificates.js';
import { OID, digest } from './identifiers.js';
import {
  explicit,
  generalizedTime,
  integer,
  nullValue,
  octetString,
  oid,
  retag,
  sequence,
  setOf,
} from './der-writer.js';
import { ID_ML_DSA_65, NodeMlDsaSigner, mlDsa65PublicKeyFromSpki, mlDsa65SeedFromPkcs8, verifyMlDsa65 } from '../ml-dsa.js';
import { type TsaKeySigner, MlDsaTsaKeySigner, WebCryptoTsaKeySigner, signerMatchesCertificate } from './key-signer.js';
import { derToPem, pemToDer } from './pem.js';
import { verifyTimestampResponse } from './verify.js';
import { type PkiFailure, type TimeStampRequest, PkiFailureInfo, parseTimeStampRequest, rejection } from './tsa-request.js';
import { type TokenParts, attribute, tokenParts } from './token-parts.js';
import { validatePath } from './path.js';
import { certificateFromDer, parseCertificateDer, safe, timeStampingUsageProblem } from './x509-verify.js';

/** Configuration of an {@link EmbeddedTsa}; nothing is read from the environment. */
export interface EmbeddedTsaOptions {
  /** The TSA leaf certificate (PEM). */
  tsaCertPem: string;
  /**
   * Its private key, unencrypted PKCS#8 PEM (local scheme). Exactly one of `tsaKeyPkcs8Pem` and
   * `keySigner` is given.
   */
  tsaKeyPkcs8Pem?: string;
  /** Or the key behind a signer, e.g. a {@link KmsTsaKeySigner} (the key stays in AWS KMS). */
  keySigner?: TsaKeySigner;
  /** The root CA certificate the leaf chains to (PEM). */
  rootCertPem: string;
  /** TSA policy OID written in every TSTInfo (RFC 3161 §2.4.2 `policy`). */
  policyOid: string;
  /** Source of genTime (default: the system clock). */
  clock?: () => Date;
  /** Source of serial numbers; must return positive, never-repeating values (default: 128 random bits). */
  serial?: () => bigint;
  /** Put the root next to the TSA certificate in SignedData.certificates (default true). */
  includeRootCertificate?: boolean;
  /** Put the TSA's subject name in TSTInfo.tsa (default true). */
  includeTsaName?: boolean;
  /**
   * Run the full {@link verifyTimestampResponse} on each issued token before returning it (default
   * false: it costs ~10 ms). Without it, each token's signature is still verified with the leaf's
   * public key and genTime is checked against the certificates' validity; usage, key and chain
   * were checked at start-up.
   */
  verifyIssued?: boolean;
}

/** A request to {@link EmbeddedTsa.issue}. */
export interface EmbeddedTimestampRequest {
  /** SHA-256 message imprint, 32 bytes. */
  imprint: Uint8Array;
  /** Nonce to echo in the TSTInfo (RFC 3161 §2.4.1); omitted when undefined. */
  nonce?: bigint;
  /** Whether to include the certificates in the token (RFC 3161 §2.4.1 certReq); default false. */
  certReq?: boolean;
}

/** What {@link EmbeddedTsa.issue} returns: the port's fields plus the request's echo. */
export interface EmbeddedIssuedTimestamp extends IssuedTimestamp {
  /** The nonce in the token, if any. */
  nonce?: bigint;
  /** DER of the TimeStampToken (the CMS ContentInfo inside `response`). */
  token: Uint8Array;
}

/** PKIStatus granted (RFC 3161 §2.4.2). */
const STATUS_GRANTED = 0;

/** What {@link EmbeddedTsa.answer} made of a request: the DER TimeStampResp and whether it grants a token. */
export type TimeStampAnswer =
  | { granted: true; response: Uint8Array; issued: EmbeddedIssuedTimestamp }
  | { granted: false; response: Uint8Array; failure: PkiFailure; text: string };

/** Message imprint lengths of the hash algorithms this TSA accepts in requests (RFC 3161 §2.4.1). */
const IMPRINT_LENGTHS: Readonly<Record<string, number>> = { [OID.sha256]: 32, [OID.sha384]: 48, [OID.sha512]: 64 };

const OID_PATTERN = /^[0-2](\.(0|[1-9][0-9]*))+$/;

// Encodings that are the same in every token and every TSA.
/** AlgorithmIdentifier of SHA-256 with NULL parameters, and with them absent (RFC 5754 §2). */
const SHA256_NULL = sequence(oid(OID.sha256), nullValue());
const SHA256_ABSENT = sequence(oid(OID.sha256));
const VERSION_1 = integer(1);
const VERSION_3 = integer(3);
const OID_CT_TSTINFO = oid(OID.ctTSTInfo);
const OID_SIGNED_DATA = oid(OID.signedData);
const OID_MESSAGE_DIGEST = oid(OID.messageDigest);
/** Accuracy ::= SEQUENCE { seconds INTEGER OPTIONAL, millis [0], micros [1] }: one second (RFC 3161 §2.4.2). */
const ACCURACY_ONE_SECOND = sequence(integer(1));
/** RFC 5652 §11.1 contentType attribute: id-ct-TSTInfo (RFC 3161 §2.4.2). */
const CONTENT_TYPE_ATTRIBUTE = attribute(OID.contentType, OID_CT_TSTINFO);
/** SignedData.digestAlgorithms: SET OF one SHA-256 identifier (RFC 5652 §5.1). */
const DIGEST_ALGORITHMS = setOf([SHA256_NULL]);
/**
 * SHA-512 with the parameters absent, for ML-DSA-65 signers (RFC 9882 §3.3: SHA-512 MUST be
 * supported; RFC 5754 §2: absent parameters are what implementations SHOULD generate).
 */
const SHA512_ABSENT = sequence(oid(OID.sha512));
const DIGEST_ALGORITHMS_SHA512 = setOf([SHA512_ABSENT]);
/** PKIStatusInfo of a granted request: SEQUENCE { status 0 } (RFC 3161 §2.4.2). */
const STATUS_GRANTED_INFO = sequence(integer(STATUS_GRANTED));
/** The identifier octet of [0] IMPLICIT SignedAttributes in SignerInfo (RFC 5652 §5.3). */
const SIGNED_ATTRS_TAG = 0xa0;

/** What signing needs, once the start-up checks passed. */
interface TsaMaterial {
  signer: TsaKeySigner;
  /** SignerInfo.signatureAlgorithm for this signer, encoded. */
  signatureAlgorithm: Uint8Array;
  /** The CMS digest: SignerInfo.digestAlgorithm, SignedData.digestAlgorithms and the message-digest hash. */
  digest: { name: 'SHA-256' | 'SHA-512'; algorithm: Uint8Array; algorithms: Uint8Array };
}

/**
 * RFC 3161 TSA backed by a key held by the service (scheme `embedded`).
 *
 * Construction checks synchronously what it can (PEM syntax, the leaf's ExtendedKeyUsage, strict
 * DER of both certificates) and starts the asynchronous checks (key matches the leaf, leaf chains
 * to the root); use {@link EmbeddedTsa.create} to await them at start-up. A TSA whose checks fail
 * never issues.
 */
export class EmbeddedTsa implements TimestampAuthority {
  readonly scheme = 'embedded' as const;
  /** The TSA policy OID written in tokens. */
  readonly policyOid: string;
  private readonly ready: Promise<TsaMaterial>;
  private readonly clock: () => Date;
  private readonly serialSource: () => bigint;
  private readonly options: EmbeddedTsaOptions;
  private readonly certificatesPem: string[];
  /** The leaf's key: a node:crypto KeyObject (ECDSA, RSA), or the raw ML-DSA-65 public key. */
  private readonly publicKey: KeyObject | { mlDsa65: Uint8Array };
  private readonly parts: TokenParts;

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
    const tsaCertDer = certificateDer(tsaCert);
    const rootCertDer = certificateDer(rootCert);
    // RFC 3161 §2.3, checked as every verifier of its tokens checks it (x509-verify.ts). A leaf
    // that is not strict DER is refused by tokenParts below.
    const usage = safe(() => timeStampingUsageProblem(certificateFromDer(tsaCertDer)));
    if (usage) throw new Error(`TSA certificate refused: ${usage}`);
    this.certificatesPem = [derToPem(tsaCertDer), derToPem(rootCertDer)];
    this.parts = tokenParts(options, tsaCertDer, rootCertDer);
    try {
      const spki = parseCertificateDer(tsaCertDer).spki;
      // ML-DSA-65 keys are taken raw: verifyMlDsa65 verifies on any Node (node:crypto, else noble).
      this.publicKey = isMlDsaCertificate(tsaCertDer)
        ? { mlDsa65: mlDsa65PublicKeyFromSpki(spki) }
        : createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
    } catch {
      throw new Error('TSA certificate refused: its public key cannot be used');
    }
    this.ready = (async () => {
      // Only what signing needs: a root key passed along by mistake is never imported.
      const pem = options.tsaKeyPkcs8Pem ?? '';
      const seed = mlDsaSeedOf(pem);
      const signer: TsaKeySigner =
        options.keySigner ?? (seed ? new MlDsaTsaKeySigner(NodeMlDsaSigner.fromSeed(seed)) : new WebCryptoTsaKeySigner(await importPrivateKey(pem)));
      // The start-up checks of a TSA's own material (RFC 3161 §2.3 usage was checked above): the
      // key belongs to the leaf (one signature, verified with the leaf's public key: for a KMS key
      // this is one Sign call), and the leaf chains to the root now.
      if (!(await signerMatchesCertificate(signer, tsaCert))) {
        throw new Error('TSA certificate refused: the private key does not match the certificate');
      }
      // The one path validation (path.ts): the one every token of this TSA meets in a verifier.
      const chain = validatePath(certificateFromDer(tsaCertDer), { anchors: [certificateFromDer(rootCertDer)], checkDate: clock() });
      if (!chain.ok) throw new Error(`TSA certificate refused: it does not chain to the root: ${chain.reason}`);
      // SignerInfo.signatureAlgorithm (RFC 5652 §5.3): RFC 4055 §5 wants NULL parameters for RSA,
      // RFC 5758 §3.2 wants them absent for ECDSA; the signer says which.
      const { oid: signatureOid, nullParameters } = signer.signatureAlgorithm;
      const signatureAlgorithm = nullParameters ? sequence(oid(signatureOid), nullValue()) : sequence(oid(signatureOid));
      const digest =
        signer.digest === 'SHA-512'
          ? { name: 'SHA-512' as const, algorithm: SHA512_ABSENT, algorithms: DIGEST_ALGORITHMS_SHA512 }
          : { name: 'SHA-256' as const, algorithm: SHA256_NULL, algorithms: DIGEST_ALGORITHMS };
      return { signer, signatureAlgorithm, digest };
    })();
    // The failure is reported by create() or by the first timestamp(); never as an unhandled rejection.
    this.ready.catch(() => undefined);
  }

  /**
   * Creates a TSA and waits for its start-up checks.
   * @throws Error when the leaf cannot sign time-stamps, the key is not the leaf's, or the leaf does
   *   not chain to the root.
   */
  static async create(options: EmbeddedTsaOptions): Promise<EmbeddedTsa> {
    const tsa = new EmbeddedTsa(options);
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
   * names (badAlg for an imprint other than SHA-256/384/512, unacceptedPolicy, unacceptedExtension,
   * …). Never throws.
   */
  async respond(tsqDer: Uint8Array): Promise<Uint8Array> {
    return (await this.answer(tsqDer)).response;
  }

  /**
   * {@link respond} with the outcome spelled out: granted (with the token's fields) or rejected
   * (with the PKIFailureInfo bit's name), so that an HTTP front end can count only granted tokens.
   * Never throws.
   */
  async answer(tsqDer: Uint8Array): Promise<TimeStampAnswer> {
    let req: TimeStampRequest;
    try {
      req = parseTimeStampRequest(tsqDer);
    } catch {
      return rejected('badDataFormat', 'the request is not a DER TimeStampReq');
    }
    if (req.version !== 1n) return rejected('badRequest', 'only version 1 requests are supported');
    const alg = req.hashAlgorithm;
    const length = IMPRINT_LENGTHS[alg.oid];
    if (length === undefined || !alg.nullOrAbsent) {
      return rejected('badAlg', 'only SHA-256, SHA-384 and SHA-512 message imprints are accepted');
    }
    if (req.hashedMessage.byteLength !== length) return rejected('badDataFormat', `the imprint's length does not match its hash algorithm (${length} bytes)`);
    // RFC 3161 §2.4.2: a requested policy we do not apply is refused with unacceptedPolicy.
    if (req.reqPolicy !== undefined && req.reqPolicy !== this.policyOid) {
      return rejected('unacceptedPolicy', `the requested policy is not supported; this TSA's policy is ${this.policyOid}`);
    }
    // RFC 3161 §2.4.1: unknown extensions, critical or not, make the TSA refuse.
    if (req.extensionCount > 0) {
      return rejected('unacceptedExtension', 'request extensions are not supported');
    }
    try {
      const issued = await this.sign(req.hashedMessage, req.nonce, req.certReq, alg.params, alg.oid);
      return { granted: true, response: issued.response, issued };
    } catch {
      return rejected('systemFailure', 'the time-stamp could not be produced');
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
  private assertSignature(signedAttrs: Uint8Array, signature: Uint8Array): void {
    const key = this.publicKey;
    const ok = 'mlDsa65' in key ? verifyMlDsa65(signature, signedAttrs, key.mlDsa65) : nodeVerify('sha256', signedAttrs, key, signature);
    if (!ok) {
      throw new Error('the embedded TSA produced a signature that does not verify with its certificate');
    }
  }

  private nextSerial(): bigint {
    const serial = this.serialSource();
    // RFC 3161 §2.4.2: serialNumber is a positive integer, unique per token.
    if (typeof serial !== 'bigint' || serial <= 0n) throw new RangeError('the serial source must return a positive bigint');
    return serial;
  }

  private async sign(
    imprint: Uint8Array,
    nonce: bigint | undefined,
    certReq: boolean,
    nullParams = true,
    hashOid: string = OID.sha256,
  ): Promise<EmbeddedIssuedTimestamp> {
    const loaded = await this.ready;
    const genTime = this.clock();
    const serial = this.nextSerial();
    const parts = this.parts;
    // A token whose genTime lies outside the certificates' validity would never verify
    // (RFC 5280 §6.1.3 (a)(2) at the time of stamping).
    if (genTime.getTime() < parts.validFrom || genTime.getTime() > parts.validUntil) {
      throw new Error(`the TSA certificate chain is not valid at ${genTime.toISOString()} (a certificate expired or is not yet valid)`);
    }

    // RFC 3161 §2.4.2 TSTInfo ::= SEQUENCE { version, policy, messageImprint, serialNumber, genTime,
    // accuracy OPTIONAL, ordering DEFAULT FALSE, nonce OPTIONAL, tsa [0] OPTIONAL, extensions [1] OPTIONAL }.
    const tstInfo = sequence(
      VERSION_1,
      parts.policy,
      // MessageImprint. RFC 5754 §2 allows absent or NULL parameters. NULL is what `openssl ts
      // -query` writes, and OpenSSL's -queryfile check compares the whole AlgorithmIdentifier; a
      // request that leaves them out gets the same form back (RFC 3161 §2.4.2: the same messageImprint).
      sequence(imprintAlgorithm(hashOid, nullParams), octetString(imprint)),
      integer(serial),
      // YYYYMMDDhhmmss[.s...]Z, the fraction without trailing zeros (RFC 3161 §2.4.2, X.690 §11.7).
      generalizedTime(genTime),
      ACCURACY_ONE_SECOND,
      // `ordering` is left out: it is DEFAULT FALSE, and DER omits default values (X.690 §11.5).
      ...(nonce !== undefined ? [integer(nonce)] : []),
      ...(parts.tsaName ? [parts.tsaName] : []),
    );

    // RFC 5652 §5.3 signed attributes, RFC 5035 §5.4.1 signingCertificateV2. The signature covers
    // their DER as a SET OF (RFC 5652 §5.4), whose elements DER sorts (X.690 §11.6).
    const signedAttrs = setOf([
      CONTENT_TYPE_ATTRIBUTE,
      attribute(OID.messageDigest, octetString(digest(loaded.digest.name, tstInfo)), OID_MESSAGE_DIGEST),
      parts.signingCertificateV2,
    ]);
    const signature = await loaded.signer.sign(signedAttrs);
    this.assertSignature(signedAttrs, signature);

    // SignerInfo ::= SEQUENCE { version 1 (issuerAndSerialNumber), sid, digestAlgorithm,
    // signedAttrs [0] IMPLICIT, signatureAlgorithm, signature } (RFC 5652 §5.3). The digest
    // algorithm is the signer's (SHA-256 with NULL parameters, or SHA-512 for ML-DSA-65), here and
    // in digestAlgorithms.
    const signerInfo = sequence(
      VERSION_1,
      parts.issuerAndSerialNumber,
      loaded.digest.algorithm,
      retag(signedAttrs, SIGNED_ATTRS_TAG),
      loaded.signatureAlgorithm,
      octetString(signature),
    );
    // SignedData ::= SEQUENCE { version 3 (eContentType is not id-data, RFC 5652 §5.1),
    // digestAlgorithms, encapContentInfo, certificates [0] IMPLICIT OPTIONAL, signerInfos }.
    const signedData = sequence(
      VERSION_3,
      loaded.digest.algorithms,
      // EncapsulatedContentInfo: eContent [0] EXPLICIT OCTET STRING holding the DER of TSTInfo
      // (RFC 3161 §2.4.2), primitive as DER wants it (X.690 §10.2).
      sequence(OID_CT_TSTINFO, explicit(0, octetString(tstInfo))),
      // RFC 3161 §2.4.1: certificates only when certReq; otherwise the field MUST be absent.
      ...(certReq ? [parts.certificates] : []),
      setOf([signerInfo]),
    );
    // ContentInfo ::= SEQUENCE { contentType id-signedData, content [0] EXPLICIT } (RFC 5652 §3).
    const tokenDer = sequence(OID_SIGNED_DATA, explicit(0, signedData));
    // TimeStampResp ::= SEQUENCE { status PKIStatusInfo, timeStampToken OPTIONAL } (RFC 3161 §2.4.2).
    const response = sequence(STATUS_GRANTED_INFO, tokenDer);

    if (this.options.verifyIssued === true && hashOid === OID.sha256) {
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

/** The seed of an ML-DSA-65 PKCS#8 PEM (RFC 9881 §6 seed form), or undefined for any other key. */
function mlDsaSeedOf(pem: string): Uint8Array | undefined {
  try {
    return mlDsa65SeedFromPkcs8(pemToDer(pem, 'PRIVATE KEY'));
  } catch {
    return undefined;
  }
}

/** Whether a certificate's subjectPublicKeyInfo names id-ml-dsa-65 (RFC 9881). */
function isMlDsaCertificate(der: Uint8Array): boolean {
  try {
    return certificateFromDer(der).publicKeyAlgorithm.oid === ID_ML_DSA_65;
  } catch {
    return false;
  }
}

/** The imprint's AlgorithmIdentifier as the request wrote it: NULL parameters or none (RFC 5754 §2). */
function imprintAlgorithm(hashOid: string, nullParams: boolean): Uint8Array {
  if (hashOid === OID.sha256) return nullParams ? SHA256_NULL : SHA256_ABSENT;
  return nullParams ? sequence(oid(hashOid), nullValue()) : sequence(oid(hashOid));
}

function rejected(failure: PkiFailure, text: string): TimeStampAnswer {
  return { granted: false, response: rejection(PkiFailureInfo[failure], text), failure, text };
}
