/**
 * Signatures over X.509 and CMS data with node:crypto (RSA PKCS#1 v1.5, RSASSA-PSS, ECDSA on
 * P-256/P-384/P-521, Ed25519, Ed448) and ML-DSA-65 (lib/crypto/ml-dsa.ts): the one signature check
 * of the verification side, used by path validation (path.ts), the time-stamp verifier (verify.ts)
 * and the PAdES verifier (../pdf-sign/verify.ts). Split from x509-verify.ts by concern.
 */
import { type KeyObject, constants, createPublicKey, verify as nodeVerify } from 'node:crypto';
import {
  type AlgorithmIdentifier,
  type DerElement,
  DerCursor,
  DerError,
  absentOrNullParams,
  children,
  isContext,
  readAlgorithmIdentifier,
  readSmallInteger,
  sequence,
} from './der.js';
import { type HashName, OID, hashByOid, nodeHashName } from './identifiers.js';
import type { Certificate } from './x509-verify.js';
import { ID_ML_DSA_65, ML_DSA_65_PUBLIC_KEY_BYTES, verifyMlDsa65 } from '../ml-dsa.js';

// Each certificate's public key, imported once; keyed by the certificate object, so it goes with it (lib/memo.ts).
const publicKeys = new WeakMap<Certificate, KeyObject>();

/**
 * The certificate's public key for node:crypto.
 * @throws Error when node cannot import it.
 */
export function publicKeyOf(cert: Certificate): KeyObject {
  let key = publicKeys.get(cert);
  if (!key) {
    key = createPublicKey({ key: Buffer.from(cert.spki), format: 'der', type: 'spki' });
    publicKeys.set(cert, key);
  }
  return key;
}

type SignatureKind = 'rsa' | 'rsa-pss' | 'ecdsa' | 'ed25519' | 'ed448' | 'ml-dsa-65';

/** Signature algorithms by OID (RFC 4055, RFC 5758, RFC 8410, RFC 3370 §3.2); hash undefined: see below. */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, { kind: SignatureKind; hash?: HashName; name: string }>> = {
  '1.2.840.113549.1.1.5': { kind: 'rsa', hash: 'SHA-1', name: 'sha1WithRSAEncryption' },
  '1.2.840.113549.1.1.11': { kind: 'rsa', hash: 'SHA-256', name: 'sha256WithRSAEncryption' },
  '1.2.840.113549.1.1.12': { kind: 'rsa', hash: 'SHA-384', name: 'sha384WithRSAEncryption' },
  '1.2.840.113549.1.1.13': { kind: 'rsa', hash: 'SHA-512', name: 'sha512WithRSAEncryption' },
  // CMS only (RFC 3370 §3.2): rsaEncryption with the SignerInfo's digest algorithm.
  [OID.rsaEncryption]: { kind: 'rsa', name: 'rsaEncryption' },
  '1.2.840.113549.1.1.10': { kind: 'rsa-pss', name: 'RSASSA-PSS' },
  '1.2.840.10045.4.1': { kind: 'ecdsa', hash: 'SHA-1', name: 'ecdsa-with-SHA1' },
  '1.2.840.10045.4.3.2': { kind: 'ecdsa', hash: 'SHA-256', name: 'ecdsa-with-SHA256' },
  '1.2.840.10045.4.3.3': { kind: 'ecdsa', hash: 'SHA-384', name: 'ecdsa-with-SHA384' },
  '1.2.840.10045.4.3.4': { kind: 'ecdsa', hash: 'SHA-512', name: 'ecdsa-with-SHA512' },
  '1.3.101.112': { kind: 'ed25519', name: 'Ed25519' },
  '1.3.101.113': { kind: 'ed448', name: 'Ed448' },
  // RFC 9881 §2 (certificates), RFC 9882 §3 (CMS): pure ML-DSA-65, empty context, no parameters.
  [ID_ML_DSA_65]: { kind: 'ml-dsa-65', name: 'ML-DSA-65' },
};

const CURVES: ReadonlySet<string> = new Set(['prime256v1', 'secp384r1', 'secp521r1']);
const MGF1 = '1.2.840.113549.1.1.8';

/** RSASSA-PSS-params (RFC 4055 §3.1, explicit tags, SHA-1 / MGF1-SHA-1 / 20 / 1 by default). */
function pssParams(alg: AlgorithmIdentifier): { hash: HashName; saltLength: number } {
  if (!alg.params) throw new DerError('RSASSA-PSS without parameters');
  const c = new DerCursor(sequence(alg.params, 'RSASSA-PSS-params'), 'RSASSA-PSS-params');
  const explicit = (n: number): DerElement | undefined => {
    const el = c.optional((e) => isContext(e, n, true));
    if (!el) return undefined;
    const inner = children(el);
    if (inner.length !== 1) throw new DerError('RSASSA-PSS-params: malformed');
    return inner[0];
  };
  const hashEl = explicit(0);
  const hashAlg = hashEl ? readAlgorithmIdentifier(hashEl, 'PSS hashAlgorithm') : undefined;
  const hash = hashAlg ? hashByOid(hashAlg.oid)?.name : 'SHA-1';
  if (!hash || (hashAlg && !absentOrNullParams(hashAlg))) throw new DerError('RSASSA-PSS: unsupported hash algorithm');
  const mgfEl = explicit(1);
  let mgfHash: HashName | undefined = 'SHA-1';
  if (mgfEl) {
    const mgf = readAlgorithmIdentifier(mgfEl, 'PSS maskGenAlgorithm');
    if (mgf.oid !== MGF1 || !mgf.params) throw new DerError('RSASSA-PSS: unsupported mask generation function');
    const mgfAlg = readAlgorithmIdentifier(mgf.params, 'MGF1 hash');
    mgfHash = hashByOid(mgfAlg.oid)?.name;
  }
  if (mgfHash !== hash) throw new DerError('RSASSA-PSS: MGF1 must use the message hash');
  const saltEl = explicit(2);
  const saltLength = saltEl ? readSmallInteger(saltEl, 'PSS saltLength') : 20;
  const trailerEl = explicit(3);
  if (trailerEl && readSmallInteger(trailerEl, 'PSS trailerField') !== 1) throw new DerError('RSASSA-PSS: trailerField must be 1');
  c.end();
  return { hash, saltLength };
}

/**
 * Verifies `signature` over `data` with the public key of `signer` under the signature algorithm
 * `alg`. `digestHash` is the hash for rsaEncryption (CMS, RFC 3370 §3.2), which names none itself.
 * @returns whether it verifies, and the algorithm's description.
 * @throws DerError for an unsupported algorithm, bad parameters or a key of another type.
 */
export function verifySignature(
  alg: AlgorithmIdentifier,
  signer: Certificate,
  data: Uint8Array,
  signature: Uint8Array,
  digestHash?: HashName,
): { ok: boolean; description: string } {
  const known = SIGNATURE_ALGORITHMS[alg.oid];
  if (!known) throw new DerError(`unsupported signature algorithm ${alg.oid}`);
  if (known.kind === 'ml-dsa-65') {
    // RFC 9881 §2: the parameters MUST be absent, in the signature algorithm and in the key's.
    if (alg.params !== undefined) throw new DerError('ML-DSA-65 with parameters (RFC 9881 §2: absent)');
    if (signer.publicKeyAlgorithm.oid !== ID_ML_DSA_65 || signer.publicKeyAlgorithm.params !== undefined) {
      throw new DerError(`ML-DSA-65 with a key of algorithm ${signer.publicKeyAlgorithm.oid}${signer.publicKeyAlgorithm.params ? ' with parameters' : ''}`);
    }
    // RFC 9881 §4: the BIT STRING is pkEncode(pk), 1952 bytes for ML-DSA-65.
    if (signer.subjectPublicKey.byteLength !== ML_DSA_65_PUBLIC_KEY_BYTES) throw new DerError(`ML-DSA-65 public key of ${signer.subjectPublicKey.byteLength} bytes`);
    // verifyMlDsa65: node:crypto (OpenSSL 3.5) where this Node has ML-DSA, else noble; the raw key
    // keeps it working on a Node whose node:crypto cannot even import an ML-DSA key.
    return { ok: verifyMlDsa65(signature, data, signer.subjectPublicKey), description: known.name };
  }
  const key = publicKeyOf(signer);
  const keyType = key.asymmetricKeyType;
  switch (known.kind) {
    case 'rsa': {
      const hash = known.hash ?? digestHash;
      if (!hash) throw new DerError(`${known.name} needs a digest algorithm`);
      if (!absentOrNullParams(alg)) throw new DerError(`${known.name} with unexpected parameters`);
      if (keyType !== 'rsa') throw new DerError(`${known.name} with a ${keyType ?? 'unknown'} key`);
      return { ok: nodeVerify(nodeHashName(hash), data, key, signature), description: `${known.name}, ${hash}` };
    }
    case 'rsa-pss': {
      const { hash, saltLength } = pssParams(alg);
      if (keyType !== 'rsa' && keyType !== 'rsa-pss') throw new DerError(`RSASSA-PSS with a ${keyType ?? 'unknown'} key`);
      const ok = nodeVerify(nodeHashName(hash), data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }, signature);
      return { ok, description: `RSASSA-PSS, ${hash}, salt ${saltLength}` };
    }
    case 'ecdsa': {
      const hash = known.hash as HashName;
      // RFC 5758 §3.2: parameters absent (NULL tolerated, as many implementations write it).
      if (!absentOrNullParams(alg)) throw new DerError(`${known.name} with unexpected parameters`);
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (keyType !== 'ec' || !curve || !CURVES.has(curve)) throw new DerError(`${known.name} with an unsupported key (${keyType ?? 'unknown'} ${curve ?? ''})`);
      return { ok: nodeVerify(nodeHashName(hash), data, { key, dsaEncoding: 'der' }, signature), description: `${known.name} on ${curve}` };
    }
    case 'ed25519':
    case 'ed448': {
      // RFC 8410 §3: parameters absent; RFC 8419 §3: pure EdDSA over the signed attributes.
      if (alg.params !== undefined) throw new DerError(`${known.name} with parameters`);
      if (keyType !== known.kind) throw new DerError(`${known.name} with a ${keyType ?? 'unknown'} key`);
      return { ok: nodeVerify(null, data, key, signature), description: known.name };
    }
  }
}
