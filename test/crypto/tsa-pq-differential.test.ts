/**
 * Post-quantum RFC 3161 tokens (ML-DSA-65, RFC 9882 CMS, RFC 9881 certificates): our verifier
 * (lib/crypto/tsa/verify.ts over der.ts and x509-verify.ts) against an independent one written
 * here from the RFCs with other parts: pkijs/asn1js decode the CMS structures, and Node 24's
 * node:crypto (OpenSSL 3.5) does every cryptographic step: `crypto.verify(null, …)` with the
 * leaf's ML-DSA-65 key (taken from `X509Certificate`, OpenSSL's own X.509 parser), the leaf's
 * signature by the root (`X509Certificate.verify`), and the digests. The system's `openssl` CLI
 * (3.0 on this machine) cannot read ML-DSA keys at all, so it is not a third opinion here.
 *
 * Genuine tokens must pass both. Every byte of the signed attributes and of the TSTInfo, and a
 * sample of every other region (signature, the leaf, the root's copy, the envelope), is flipped
 * in turn: our verifier must never accept what the reference refuses, and may refuse what the
 * reference accepts only where the flipped byte lies outside everything the signature and the
 * path cover (the root copy the token carries, SignedData and SignerInfo fields RFC 5652 fixes
 * but does not sign, DER our strict reader refuses): the rule of test/crypto/tsa-verify-differential.
 * On every case the ML-DSA-65 signature is also checked by noble (@noble/post-quantum), a third
 * implementation of FIPS 204, which must agree with node:crypto.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createHash, verify as nodeVerify } from 'node:crypto';
import { before, describe, it } from 'node:test';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { type MlDsaTsaKeySigner } from '../../lib/crypto/tsa/key-signer.js';
import { type PqTsaCertificateBundle, generatePqTsaCertificates, pqSignerFromPkcs8Pem } from '../../lib/crypto/tsa/pq-certificates.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';

// The reference imports nothing of ours: its identifiers, its PEM reading (node:crypto's
// X509Certificate) and noble's ML-DSA-65 check are its own.
/** id-ml-dsa-65 (RFC 9881 §2). */
const ID_ML_DSA_65 = '2.16.840.1.101.3.4.3.18';
const OID_CT_TSTINFO = '1.2.840.113549.1.9.16.1.4';
const OID_CONTENT_TYPE = '1.2.840.113549.1.9.3';
const OID_MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const OID_SIGNING_CERTIFICATE_V2 = '1.2.840.113549.1.9.16.2.47';
const OID_KP_TIMESTAMPING = '1.3.6.1.5.5.7.3.8';
const DIGESTS: Record<string, string> = {
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};

/** The DER of the first certificate of a PEM text, read by OpenSSL. */
const pemToDer = (pem: string): Uint8Array => new Uint8Array(new X509Certificate(pem).raw);

/** FIPS 204 ML-DSA-65 verification by noble (pure, empty context); an undecodable signature is invalid. */
function verifyMlDsa65Noble(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ml_dsa65.verify(signature, message, publicKey);
  } catch {
    return false;
  }
}

interface Reference {
  ok: boolean;
  why: string;
  /** What the signature covers and the signature, when they could be read (for noble). */
  signed?: { data: Uint8Array; signature: Uint8Array; publicKey: Uint8Array };
}

/**
 * The independent verifier: TimeStampResp → status granted → SignedData with one SignerInfo →
 * TSTInfo imprint → content-type and message-digest attributes (RFC 5652 §11) with SHA-384/512
 * (RFC 9882 §3.3) → ML-DSA-65 signature over the DER SET OF the signed attributes (RFC 5652 §5.4,
 * RFC 9882 §3.3) → ESSCertIDv2 names the leaf (RFC 5035) → the leaf is signed by the root, both
 * valid at genTime, EKU timeStamping only (RFC 3161 §2.3).
 */
function referenceVerify(response: Uint8Array, imprint: Uint8Array, rootPem: string, extraLeafPem?: string): Reference {
  const no = (why: string, signed?: Reference['signed']): Reference => ({ ok: false, why, ...(signed ? { signed } : {}) });
  try {
    const resp = pkijs.TimeStampResp.fromBER(Uint8Array.from(response));
    // RFC 3161 §2.4.2: granted (0) or grantedWithMods (1) carry a token.
    if (resp.status.status !== 0 && resp.status.status !== 1) return no('status');
    if (!resp.timeStampToken || resp.timeStampToken.contentType !== pkijs.ContentInfo.SIGNED_DATA) return no('not SignedData');
    const sd = new pkijs.SignedData({ schema: resp.timeStampToken.content });
    if (sd.encapContentInfo.eContentType !== OID_CT_TSTINFO || !sd.encapContentInfo.eContent) return no('eContentType');
    const eContent = new Uint8Array(sd.encapContentInfo.eContent.getValue());
    const tst = pkijs.TSTInfo.fromBER(eContent);
    if (!Buffer.from(tst.messageImprint.hashedMessage.valueBlock.valueHexView).equals(Buffer.from(imprint))) return no('imprint');
    if (sd.signerInfos.length !== 1) return no('signers');
    const si = sd.signerInfos[0] as pkijs.SignerInfo;
    const hash = DIGESTS[si.digestAlgorithm.algorithmId];
    if (!hash) return no(`digest ${si.digestAlgorithm.algorithmId}`);
    if (si.signatureAlgorithm.algorithmId !== ID_ML_DSA_65 || si.signatureAlgorithm.algorithmParams !== undefined) return no('signature algorithm');
    if (!si.signedAttrs) return no('no signed attributes');
    const attr = (type: string) => {
      const found = si.signedAttrs?.attributes.filter((a) => a.type === type) ?? [];
      return found.length === 1 && found[0]?.values.length === 1 ? (found[0].values[0] as asn1js.AsnType) : undefined;
    };
    const ct = attr(OID_CONTENT_TYPE);
    if (!(ct instanceof asn1js.ObjectIdentifier) || ct.valueBlock.toString() !== OID_CT_TSTINFO) return no('content-type');
    const md = attr(OID_MESSAGE_DIGEST);
    if (!(md instanceof asn1js.OctetString) || !Buffer.from(md.valueBlock.valueHexView).equals(createHash(hash).update(eContent).digest())) return no('message-digest');
    // RFC 5652 §5.4: the DER of the attributes with the SET OF tag, not [0].
    const data = new Uint8Array(si.signedAttrs.encodedValue.slice(0));
    data[0] = 0x31;
    const signature = new Uint8Array(si.signature.valueBlock.valueHexView);
    const candidates = [...(sd.certificates ?? []).filter((c): c is pkijs.Certificate => c instanceof pkijs.Certificate).map((c) => new Uint8Array(c.toSchema().toBER())), ...(extraLeafPem ? [pemToDer(extraLeafPem)] : [])];
    const sid = si.sid as pkijs.IssuerAndSerialNumber;
    const leafDer = candidates.find((der) => {
      const c = pkijs.Certificate.fromBER(Uint8Array.from(der));
      return c.serialNumber.isEqual(sid.serialNumber) && c.issuer.isEqual(sid.issuer);
    });
    if (!leafDer) return no('signer certificate not found');
    const leaf = new X509Certificate(leafDer);
    const root = new X509Certificate(rootPem);
    if (leaf.publicKey.asymmetricKeyType !== 'ml-dsa-65') return no('leaf key');
    const rawKey = new Uint8Array(leaf.publicKey.export({ format: 'der', type: 'spki' })).subarray(-1952);
    const signed = { data, signature, publicKey: rawKey };
    if (!nodeVerify(null, data, leaf.publicKey, signature)) return no('signature', signed);
    const ess = attr(OID_SIGNING_CERTIFICATE_V2);
    const first = ess instanceof asn1js.Sequence ? (ess.valueBlock.value[0] as asn1js.Sequence | undefined)?.valueBlock.value[0] : undefined;
    const certHash = first instanceof asn1js.Sequence ? first.valueBlock.value.find((v) => v instanceof asn1js.OctetString) : undefined;
    if (!(certHash instanceof asn1js.OctetString) || !Buffer.from(certHash.valueBlock.valueHexView).equals(createHash('sha256').update(leafDer).digest())) return no('ESSCertIDv2', signed);
    if (!leaf.checkIssued(root) || !leaf.verify(root.publicKey)) return no('leaf not signed by the root', signed);
    const at = tst.genTime.getTime();
    for (const c of [leaf, root]) if (at < c.validFromDate.getTime() || at > c.validToDate.getTime()) return no('validity', signed);
    if (JSON.stringify(leaf.keyUsage) !== JSON.stringify([OID_KP_TIMESTAMPING])) return no('EKU', signed);
    return { ok: true, why: 'ok', signed };
  } catch (err) {
    return no(`undecodable: ${err instanceof Error ? err.message : String(err)}`);
  }
}

let bundle: PqTsaCertificateBundle;
let tsa: EmbeddedTsa;
const imprint = createHash('sha256').update('a photo').digest();

before(async () => {
  bundle = await generatePqTsaCertificates();
  tsa = await EmbeddedTsa.create({ tsaCertPem: bundle.tsaCertPem, tsaKeyPkcs8Pem: bundle.tsaKeyPkcs8Pem, rootCertPem: bundle.rootCertPem, policyOid: '2.25.1' });
});

async function ours(response: Uint8Array, roots: string[] = [bundle.rootCertPem], untrusted: string[] = []): Promise<boolean> {
  return (await verifyTimestampResponse(response, { imprint, roots, untrusted, hashAlgorithm: 'SHA-256' })).ok;
}

/** The DER of the TSTInfo a response carries (the eContent octets). */
function tstInfoOf(response: Uint8Array): Uint8Array {
  const resp = pkijs.TimeStampResp.fromBER(Uint8Array.from(response));
  const sd = new pkijs.SignedData({ schema: resp.timeStampToken?.content });
  return new Uint8Array(sd.encapContentInfo.eContent?.getValue() ?? new ArrayBuffer(0));
}

/** Where `part` lies in `whole` as [start, end), or undefined. */
function region(whole: Uint8Array, part: Uint8Array): [number, number] | undefined {
  const at = Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength).indexOf(Buffer.from(part.buffer, part.byteOffset, part.byteLength));
  return at < 0 ? undefined : [at, at + part.byteLength];
}

describe('ML-DSA-65 tokens: our verifier against node:crypto (RFC 9882, RFC 9881)', () => {
  it('both accept genuine tokens, with and without the certificates, and noble agrees on the signature', async () => {
    const withCerts = (await tsa.issue({ imprint, certReq: true, nonce: 7n })).response;
    const bare = (await tsa.issue({ imprint, certReq: false })).response;
    for (const [name, response, untrusted] of [
      ['certReq', withCerts, []],
      ['no certificates', bare, [bundle.tsaCertPem]],
    ] as const) {
      const ref = referenceVerify(response, imprint, bundle.rootCertPem, untrusted[0]);
      assert.equal(ref.ok, true, `${name}: reference says ${ref.why}`);
      assert.equal(await ours(response, [bundle.rootCertPem], [...untrusted]), true, name);
      assert.ok(ref.signed && verifyMlDsa65Noble(ref.signed.signature, ref.signed.data, ref.signed.publicKey), `${name}: noble`);
    }
  });

  it('both refuse the token under another root, for another imprint, and with SHA-256 as the CMS digest', async () => {
    const response = (await tsa.issue({ imprint, certReq: true })).response;
    const other = await generatePqTsaCertificates();
    assert.equal(referenceVerify(response, imprint, other.rootCertPem).ok, false);
    assert.equal(await ours(response, [other.rootCertPem]), false);
    const elsewhere = createHash('sha256').update('another photo').digest();
    assert.equal(referenceVerify(response, elsewhere, bundle.rootCertPem).ok, false);
    assert.equal((await verifyTimestampResponse(response, { imprint: elsewhere, roots: [bundle.rootCertPem] })).ok, false);
    // A signer that claims SHA-512 but is made to use SHA-256 (RFC 9882 §3.3: too weak for ML-DSA-65).
    const pq = pqSignerFromPkcs8Pem(bundle.tsaKeyPkcs8Pem);
    const weak = { signatureAlgorithm: { oid: ID_ML_DSA_65, nullParameters: false }, digest: 'SHA-256' as const, pq, sign: (d: Uint8Array) => pq.sign(d) };
    const weakTsa = await EmbeddedTsa.create({ tsaCertPem: bundle.tsaCertPem, keySigner: weak as unknown as MlDsaTsaKeySigner, rootCertPem: bundle.rootCertPem, policyOid: '2.25.1' });
    const weakResponse = (await weakTsa.issue({ imprint, certReq: true })).response;
    const weakRef = referenceVerify(weakResponse, imprint, bundle.rootCertPem);
    assert.equal(weakRef.ok, false);
    assert.match(weakRef.why, /digest/);
    const weakOurs = await verifyTimestampResponse(weakResponse, { imprint, roots: [bundle.rootCertPem] });
    assert.equal(weakOurs.ok, false);
    assert.match(weakOurs.checks.signature.reason, /too weak for ML-DSA-65/);
  });

  it('agree on every byte of the signed attributes and TSTInfo flipped, and on a sample of every other region', async () => {
    const response = (await tsa.issue({ imprint, certReq: true, nonce: 99n })).response;
    const leafDer = pemToDer(bundle.tsaCertPem);
    const rootDer = pemToDer(bundle.rootCertPem);
    const signedRef = referenceVerify(response, imprint, bundle.rootCertPem);
    assert.ok(signedRef.signed);
    const attrs = signedRef.signed.data.subarray(2); // the contents: [0] differs from the SET OF tag
    const regions = {
      leaf: region(response, leafDer),
      rootCopy: region(response, rootDer),
      signature: region(response, signedRef.signed.signature),
      signedAttrs: region(response, attrs),
      tstInfo: region(response, tstInfoOf(response)),
    };
    for (const [name, r] of Object.entries(regions)) assert.ok(r, `${name} found in the response`);
    const inRegion = (i: number, r: [number, number] | undefined) => r !== undefined && i >= r[0] && i < r[1];
    // Bytes outside what the signature and the path cover: the root's copy in the token, and the
    // envelope (SignedData and SignerInfo fields RFC 5652 fixes but leaves unsigned).
    const covered = (i: number) => inRegion(i, regions.leaf) || inRegion(i, regions.signature) || inRegion(i, regions.signedAttrs) || inRegion(i, regions.tstInfo);
    const unsigned = (i: number) => inRegion(i, regions.rootCopy) || !covered(i);
    const positions: number[] = [];
    for (let i = 0; i < response.length; i++) {
      const dense = inRegion(i, regions.signedAttrs) || inRegion(i, regions.tstInfo) || !(inRegion(i, regions.leaf) || inRegion(i, regions.rootCopy) || inRegion(i, regions.signature));
      if (dense || i % 53 === 0) positions.push(i);
    }
    const counts = { cases: 0, bothRefuse: 0, bothAccept: 0, oursStricterRootCopy: 0, oursStricterEnvelope: 0 };
    const accepted: number[] = [];
    const unexpected: string[] = [];
    for (const i of positions) {
      const tampered = Uint8Array.from(response);
      tampered[i] = (tampered[i] as number) ^ 0x01;
      const ref = referenceVerify(tampered, imprint, bundle.rootCertPem);
      const mine = await ours(tampered);
      counts.cases++;
      if (ref.signed) {
        const noble = verifyMlDsa65Noble(ref.signed.signature, ref.signed.data, ref.signed.publicKey);
        const node = nodeVerify(null, ref.signed.data, new X509Certificate(leafDer).publicKey, ref.signed.signature);
        if (noble !== node && Buffer.from(ref.signed.publicKey).equals(Buffer.from(new X509Certificate(leafDer).publicKey.export({ format: 'der', type: 'spki' })).subarray(-1952))) {
          unexpected.push(`byte ${i}: noble ${noble}, node:crypto ${node}`);
        }
      }
      if (mine && !ref.ok) unexpected.push(`byte ${i}: ours accepts, the reference refuses (${ref.why})`);
      else if (!mine && ref.ok) {
        if (inRegion(i, regions.rootCopy)) counts.oursStricterRootCopy++;
        else if (unsigned(i)) counts.oursStricterEnvelope++;
        else unexpected.push(`byte ${i}: ours refuses a change to a signed or certified byte that the reference accepts`);
      } else if (mine) {
        counts.bothAccept++;
        accepted.push(i);
      }
      else counts.bothRefuse++;
    }
    assert.deepEqual(unexpected, []);
    // The one flip both accept: PKIStatus granted (0) → grantedWithMods (1), byte 8 of the
    // response, which RFC 3161 §2.4.2 lets carry a token; everything signed or certified is refused.
    assert.deepEqual(accepted, [8]);
    assert.ok(counts.bothRefuse > counts.cases * 0.8, JSON.stringify(counts));
    console.log(`ML-DSA-65 token differential: ${JSON.stringify(counts)} over a ${response.length}-byte response`);
  });
});
