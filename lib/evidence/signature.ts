/**
 * The stand-alone Ed25519 signature of a hash (POST /api/v2/evidence/sign, decisions.md "Starter
 * features"): the service signs the UTF-8 bytes of the RFC 8785 canonical form of a statement that
 * names the hash, the time and the key, and, when the caller sends them, the device's key and
 * Ed25519 signature over the hash (verified first). Anyone checks it with the JWK set alone:
 *
 *   Ed25519.verify(signature, JCS(statement), JWK[kid = statement.key_id])
 *
 * One checker ({@link checkSignatureResponse}) gives the verdict for every reader (the CLI, tests).
 */
import { verifyEd25519 } from '../crypto/ed25519.js';
import { canonicalize, canonicalizeToBytes } from '../crypto/jcs.js';
import type { Ed25519Signer } from '../crypto/ports.js';
import { invalid } from '../errors.js';
import { checkDeviceSignature, type Verdict } from './proof-check.js';
import { recordStandaloneProof, type StandaloneRecorder } from './standalone-record.js';

/** The statement type this module signs; a verifier refuses any other. */
export const SIGNATURE_STATEMENT_TYPE = 'evidence-signature-v1';

/** What the service vouches for. Key order is irrelevant: the canonical form sorts (RFC 8785 §3.2.3). */
export interface SignatureStatement {
  statement_type: typeof SIGNATURE_STATEMENT_TYPE;
  sha256_hash: string;
  hash_algorithm: 'SHA-256';
  /** ISO 8601 UTC with milliseconds. */
  signed_at: string;
  algorithm: 'Ed25519';
  key_id: string;
  /** The service that signed (PUBLIC_BASE_URL): where its JWK set lives. */
  issuer: string;
  /** The device's Ed25519 key and signature over the hash, verified before signing. */
  device?: { public_key_hex: string; signature_hex: string };
}

/** The answer of POST /api/v2/evidence/sign. */
export interface SignatureResponse {
  algorithm: 'Ed25519';
  key_id: string;
  statement: SignatureStatement;
  /** Ed25519 over the UTF-8 bytes of JCS(statement), base64url (64 bytes). */
  signature: string;
}

export interface SignHashInput {
  sha256_hash: string;
  public_key_hex?: string;
  signature_hex?: string;
}

export interface SignHashDeps {
  signer: Ed25519Signer;
  issuer: string;
  clock?: () => Date;
  /** Where the answer is recorded for the caller's account (an item of its own, records.ts StandaloneKind) before it is given out. */
  recorder?: StandaloneRecorder;
}

/**
 * Signs a hash. A device signature, when given, must come with its key and verify over the hash
 * (as for anchors: decisions.md "Device chains"), else `invalid`.
 */
export async function signHash(deps: SignHashDeps, input: SignHashInput): Promise<SignatureResponse> {
  const { sha256_hash, public_key_hex, signature_hex } = input;
  if ((public_key_hex === undefined) !== (signature_hex === undefined)) {
    throw invalid('invalid_request', 'Send public_key_hex and signature_hex together (the device key and its Ed25519 signature over the hash), or neither.');
  }
  let device: SignatureStatement['device'];
  if (public_key_hex !== undefined && signature_hex !== undefined) {
    const verdict = checkDeviceSignature({ image_hash: sha256_hash, public_key_hex, signature_hex });
    if (!verdict.ok) throw invalid('invalid_signature', `The device signature does not verify: ${verdict.reason}.`);
    device = { public_key_hex: public_key_hex.toLowerCase(), signature_hex: signature_hex.toLowerCase() };
  }
  const statement: SignatureStatement = {
    statement_type: SIGNATURE_STATEMENT_TYPE,
    sha256_hash,
    hash_algorithm: 'SHA-256',
    signed_at: (deps.clock ?? (() => new Date()))().toISOString(),
    algorithm: 'Ed25519',
    key_id: deps.signer.keyId,
    issuer: deps.issuer,
    ...(device ? { device } : {}),
  };
  const signature = await deps.signer.sign(canonicalizeToBytes(statement));
  const answer: SignatureResponse = { algorithm: 'Ed25519', key_id: deps.signer.keyId, statement, signature: Buffer.from(signature).toString('base64url') };
  if (deps.recorder) await recordStandaloneProof(deps.recorder, sha256_hash, 'sig', answer);
  return answer;
}

/** The verdicts on a signature response, each proof on its own. */
export interface SignatureVerdict {
  /** The statement is ours and names the expected hash. */
  statement: Verdict;
  /** The service's Ed25519 signature over JCS(statement) with the given key. */
  signature: Verdict;
  /** The device's signature over the hash, when the statement names one (undefined otherwise). */
  device?: Verdict;
}

/**
 * Checks a signature response against the hash it should cover and the service's public key
 * (the JWK whose kid is the statement's key_id). Never throws: a malformed response fails.
 */
export function checkSignatureResponse(response: unknown, expectedHash: string, publicKey: Uint8Array | undefined): SignatureVerdict {
  const no = (reason: string): Verdict => ({ ok: false, reason });
  const r = (typeof response === 'object' && response !== null ? response : {}) as Record<string, unknown>;
  const st = (typeof r.statement === 'object' && r.statement !== null ? r.statement : undefined) as Record<string, unknown> | undefined;
  if (!st) return { statement: no('the response has no statement'), signature: no('no statement to check the signature over') };
  let statement: Verdict;
  if (st.statement_type !== SIGNATURE_STATEMENT_TYPE) statement = no(`unknown statement_type ${JSON.stringify(st.statement_type)}`);
  else if (typeof st.sha256_hash !== 'string' || st.sha256_hash !== expectedHash.toLowerCase()) statement = no(`the statement is for ${String(st.sha256_hash)}, not ${expectedHash}`);
  else if (r.key_id !== st.key_id) statement = no('key_id differs from the one in the signed statement');
  else statement = { ok: true, reason: `names sha256 ${expectedHash.slice(0, 12)}…, signed at ${String(st.signed_at)} by ${String(st.key_id)}` };

  let signature: Verdict;
  const sig = typeof r.signature === 'string' ? Buffer.from(r.signature, 'base64url') : undefined;
  if (r.algorithm !== 'Ed25519' || st.algorithm !== 'Ed25519') signature = no(`algorithm ${String(r.algorithm)}, expected Ed25519`);
  else if (!sig) signature = no('the response has no signature');
  else if (!publicKey) signature = no(`no public key for ${String(st.key_id)}: pin the service's JWK set (evidence trust add <url>, or --jwks)`);
  else {
    let canonical: Uint8Array | undefined;
    try {
      canonical = new TextEncoder().encode(canonicalize(st));
    } catch {
      canonical = undefined;
    }
    signature = !canonical
      ? no('the statement cannot be canonicalised (RFC 8785)')
      : verifyEd25519(sig, canonical, publicKey)
        ? { ok: true, reason: `Ed25519 over JCS(statement) verifies with ${String(st.key_id)}` }
        : no(`the Ed25519 signature does not verify over JCS(statement) with ${String(st.key_id)}`);
  }
  const d = st.device as { public_key_hex?: unknown; signature_hex?: unknown } | undefined;
  const device =
    d === undefined
      ? undefined
      : typeof d.public_key_hex === 'string' && typeof d.signature_hex === 'string' && typeof st.sha256_hash === 'string'
        ? checkDeviceSignature({ image_hash: st.sha256_hash, public_key_hex: d.public_key_hex, signature_hex: d.signature_hex })
        : no('the statement names a device without its key and signature');
  return { statement, signature, ...(device ? { device } : {}) };
}
