/**
 * The offline check of a PDF evidence certificate's own signature (`evidence verify --certificate`),
 * next to the receipt it carries: the PAdES signature over the whole file (lib/pdf/signature-read.ts,
 * lib/crypto/pdf-sign/verify.ts), its RFC 3161 signature timestamp against the pinned TSA roots,
 * and the signing certificate held to its validity window at the signing time (decisions.md "Key
 * validity windows"): the timestamp's genTime, or the /M the signature states when it has none.
 *
 * The certificate is pinned by the trust file's `pdf_signing` (each with its window, retirement
 * included) or, without those, by the pinned TSA root it is issued under (its window is then the
 * certificate's own notBefore/notAfter; a retirement is not known). With neither, nothing vouches
 * for the signer and the signature is not judged (pdfsig checks it against the reader's own trust).
 */
import { createHash } from 'node:crypto';
import { type ValidityWindow, checkWindow, retiredSinceNote } from '../crypto/key-windows.js';
import { verifyPadesSignature } from '../crypto/pdf-sign/verify.js';
import type { TsaRetirement } from '../crypto/tsa/history.js';
import { type Certificate, certificatesFromPem, describeCertificate } from '../crypto/tsa/x509-verify.js';
import { validatePath } from '../crypto/tsa/path.js';
import { checkTimestamp } from '../evidence/proof-check.js';
import { type SigningTime, type TrustSnapshot, describeSigningTime, judgeUnpinned } from '../evidence/verdict.js';
import { readPdfSignatures } from '../pdf/signature-read.js';
import { type StandaloneProof, type StandaloneVerification, finish } from './verify-standalone.js';

/** A PDF signing certificate the trust file pins, with the window the service published. */
export interface PinnedPdfSigner {
  sha256: string;
  window: ValidityWindow;
}

export interface VerifyPdfSignatureOptions {
  pdf: Uint8Array;
  /** The trust file's PDF signing certificates (empty: none pinned). */
  pdfSigners: readonly PinnedPdfSigner[];
  /** The services the trust file pinned them from, and when (a certificate made since is not established; verdict.ts judgeUnpinned). */
  pdfSignersPinnedBy?: readonly TrustSnapshot[];
  /** The pinned TSA roots (PEM): the signature timestamp's anchors, and the signer's issuer when no PDF signing certificate is pinned. */
  rootsPem: readonly string[];
  /** TSA certificates retired (the trust file): a signature timestamp dated after one's retirement fails. */
  tsaRetirements?: readonly TsaRetirement[];
  /** Where the anchors come from, for the notes (e.g. `trust file …` or `--root root.pem`). */
  source?: string;
}

const LABELS = {
  signature: 'PDF signature (PAdES) over the whole file',
  timestamp: 'signature timestamp (RFC 3161)',
  signer: 'PDF signing certificate pinned',
} as const;

/** "as of <t> (…)", the signing time as every reader words it; a PDF's stated time is its /M. */
function asOf(t: SigningTime): string {
  return t.source === 'rfc3161' ? describeSigningTime(t) : `as of ${t.at} (the /M the signature states; no signature timestamp, no independent time)`;
}

/**
 * Checks the PDF's signature; undefined when nothing pinned vouches for its signer (no PDF signing
 * certificate and no TSA root): then it is not judged at all. Never throws.
 */
export async function verifyPdfSignature(options: VerifyPdfSignatureOptions): Promise<StandaloneVerification | undefined> {
  if (options.pdfSigners.length === 0 && options.rootsPem.length === 0) return undefined;
  const notes: string[] = [];
  const fails = (id: keyof typeof LABELS, reason: string): StandaloneProof => ({ id: `pdf_${id}`, label: LABELS[id], state: 'fails', reason });
  let roots: Certificate[];
  try {
    roots = options.rootsPem.flatMap((pem) => certificatesFromPem(pem));
  } catch (err) {
    return finish([fails('signer', `the pinned TSA roots cannot be read: ${err instanceof Error ? err.message : String(err)}`)], notes);
  }

  let signatures;
  try {
    signatures = await readPdfSignatures(options.pdf);
  } catch (err) {
    return finish([fails('signature', `the signature cannot be read: ${err instanceof Error ? err.message : String(err)}`)], notes);
  }
  const [sig] = signatures;
  if (!sig || signatures.length !== 1) return finish([fails('signature', signatures.length === 0 ? 'the PDF is not signed' : `the PDF has ${signatures.length} signatures; an evidence certificate has one`)], notes);

  const v = await verifyPadesSignature(sig.cms, sig.signedBytes, { tsaRoots: [...options.rootsPem], ...(options.tsaRetirements ? { tsaRetirements: options.tsaRetirements } : {}) });
  const proofs: StandaloneProof[] = [];
  proofs.push(
    !v.signature.ok
      ? fails('signature', v.signature.reason)
      : sig.notWholeFile
        ? fails('signature', `${v.signature.reason}, but ${sig.notWholeFile}: not the document that was signed`)
        : { id: 'pdf_signature', label: LABELS.signature, state: 'holds', reason: `${v.signature.reason}; it covers every byte of the file but the signature's own value` },
  );

  // The signing time: the signature timestamp's genTime when it verifies, else the stated /M.
  let at: SigningTime | undefined;
  if (v.timestamp) {
    const token = checkTimestamp(v.timestamp);
    proofs.push({ id: 'pdf_timestamp', label: LABELS.timestamp, state: token.ok ? 'holds' : 'fails', reason: token.reason });
    if (token.ok && token.genTime) at = { at: token.genTime.toISOString(), source: 'rfc3161' };
  } else {
    proofs.push({ id: 'pdf_timestamp', label: LABELS.timestamp, state: 'absent', reason: 'the signature carries no RFC 3161 signature timestamp (PAdES B-B): its time is the /M it states' });
  }
  if (!at && sig.statedTime) at = { at: sig.statedTime.toISOString(), source: 'stated' };

  if (!v.signer) {
    proofs.push(fails('signer', "the signer's certificate is not in the signature"));
    return finish(proofs, notes);
  }
  proofs.push(judgeSigner(v.signer, v.certificates, roots, options.pdfSigners, at, options.pdfSignersPinnedBy));
  notes.push(
    options.pdfSigners.length > 0
      ? `pdf signer: pinned (${options.source ?? 'trust file'}: its PDF signing certificates and their windows)`
      : `pdf signer: under the pinned TSA root${options.source ? ` (${options.source})` : ''}; its retirement is not known without the trust file (evidence trust add <url>)`,
  );
  if (at) notes.push(`signed: ${at.at} by ${describeCertificate(v.signer)}`);
  return finish(proofs, notes);
}

/** The signer's certificate: pinned (trust file) or under a pinned root, and within its window at `at`. */
function judgeSigner(
  signer: Certificate,
  carried: Certificate[],
  roots: Certificate[],
  pinned: readonly PinnedPdfSigner[],
  at: SigningTime | undefined,
  pinnedBy: readonly TrustSnapshot[] | undefined,
): StandaloneProof {
  const sha256 = createHash('sha256').update(signer.der).digest('hex');
  const name = `${describeCertificate(signer)} (SHA-256 ${sha256.slice(0, 16)}…)`;
  const result = (state: StandaloneProof['state'], reason: string): StandaloneProof => ({ id: 'pdf_signer', label: LABELS.signer, state, reason });
  if (!at) return result('fails', `${name}: the signature states no signing time to judge the certificate at`);
  let window: ValidityWindow;
  let vouched: string;
  if (pinned.length > 0) {
    const entry = pinned.find((p) => p.sha256.toLowerCase() === sha256);
    if (!entry) {
      const unpinned = judgeUnpinned({ subject: name, among: 'the PDF signing certificates', failure: `${name} is not one of the PDF signing certificates the trust file lists` }, at, pinnedBy);
      return result(unpinned.state, unpinned.reason);
    }
    window = entry.window;
    vouched = `${name} is a PDF signing certificate of the trust file${entry.window.retired_at ? ' (retired: it no longer signs, what it signed before still verifies)' : ''}`;
  } else {
    const path = validatePath(signer, { anchors: roots, intermediates: carried, checkDate: new Date(at.at) });
    if (!path.ok) return result('fails', `${name} does not chain to the pinned TSA root: ${path.reason}`);
    window = { not_before: signer.notBefore.toISOString(), not_after: signer.notAfter.toISOString(), retired_at: null };
    vouched = `${name} is issued under the pinned TSA root`;
  }
  const w = checkWindow(window, new Date(at.at));
  return w.ok
    ? result('holds', `${vouched}; valid ${asOf(at)}${retiredSinceNote(w)}`)
    : result('fails', `${name} signed outside its validity window: ${w.reason} (${at.source === 'rfc3161' ? 'RFC 3161 genTime' : 'the /M the signature states'})`);
}
