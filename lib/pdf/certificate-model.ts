/**
 * What the PDF certificate renders (lib/pdf/certificate-pdf.ts): plain strings and fields, worded
 * already. The evidence domain builds it (lib/evidence/certificate.ts); this adapter only lays it
 * out, and knows nothing of evidence records or verdicts.
 */

/** A proof's standing at issue: a coloured label beside its title. */
export type ProofStatus = 'verified' | 'failed' | 'pending';

/** One proof as the certificate presents it. */
export interface CertificateProof {
  /** A stable name of the proof (not printed). */
  id: string;
  title: string;
  status: ProofStatus;
  /** One line: the checker's verdict at the time of issue, in words. */
  statusText: string;
  /** What it proves, in plain language. */
  proves: string;
  /** The precise values, label and value. */
  facts: [string, string][];
  /** How to check it without us: a sentence, then the exact commands. */
  check: { intro: string; commands: string[] };
}

/** A file attached to the PDF (PDF/A-3 style associated file). */
export interface CertificateAttachment {
  name: string;
  description: string;
  json: string;
}

export interface CertificateModel {
  image_hash: string;
  issued_at: string;
  verify_url: string;
  /** The banner at the top: its colour, headline and text. */
  verdict: { tone: 'ok' | 'pending' | 'bad' | 'registered'; headline: string; text: string };
  /** Registration and anchoring times, label and value. */
  times: [string, string][];
  proofs: CertificateProof[];
  /** Proofs this hash does not have, said plainly. */
  absent: string[];
  /** The attached file. */
  attachment: CertificateAttachment;
  /** The files attached after it, in this order. */
  more: CertificateAttachment[];
  /** How to take the attached files out of the PDF. */
  extract: string[];
}
