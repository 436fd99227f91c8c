/**
 * What the PDF evidence certificate says (decisions.md "Starter features", last item): the hash, the
 * times, each proof present (what it proves, its precise values, the command that checks it
 * without this service), the proofs not present, and the machine-readable file attached to it.
 *
 * Pure: no PDF, no HTTP, no I/O. The verdicts come from the one checker (verify.ts, which asks
 * proof-check.ts); this module only words them. The layout is lib/pdf/certificate-pdf.ts's.
 */
import { notFoundError } from '../errors.js';
import type { EvidenceReceipt } from './receipt.js';
import type { AnchoredEvidence, EvidenceItem } from './records.js';
import { isAnchored, type StandaloneAnswers, standaloneAnswers } from './records.js';
import type { SignatureResponse } from './signature.js';
import type { HashTimestamp } from './timestamp.js';
import { describeSigningTime, foldProofs, foldStatus, type ProofResult } from './verdict.js';
import type { CertificateModel as PdfCertificateModel, CertificateProof as PdfCertificateProof, ProofStatus } from '../pdf/certificate-model.js';
import type { EvidenceVerification } from './verify.js';

/**
 * Whether the caller's account holds evidence for the hash: it registered it (`registeredAt`, its
 * own registration) or anchored it, or time-stamped or signed it on its own (`own`: its
 * stand-alone answers, records.ts). Another account's registration or anchor is not the caller's.
 */
export function accountHoldsEvidence(item: EvidenceItem | undefined, accountId: string, own: StandaloneAnswers, registeredAt?: string): boolean {
  if (registeredAt !== undefined || anchoredBy(item, accountId)) return true;
  return own.timestamp !== undefined || own.signature !== undefined;
}

/** The item is anchored, by this account. */
export function anchoredBy(item: EvidenceItem | undefined, accountId: string): item is AnchoredEvidence {
  return isAnchored(item) && item.account_id === accountId;
}

/** The account's stand-alone answers on the hash, each with the checker's verdict at issue. */
export interface StandaloneEvidence {
  /** `postQuantum`: the post-quantum TSA's token (ML-DSA-65, RFC 9882), which `openssl ts -verify` cannot check. */
  timestamp?: { answer: HashTimestamp; ok: boolean; tsaName: string | null; postQuantum?: boolean };
  signature?: { answer: SignatureResponse; ok: boolean };
}

/** Nothing when the account holds evidence for the hash; else 404, the same for another account's hash and an unknown one. */
export function requireHeldEvidence(item: EvidenceItem | undefined, accountId: string, imageHash: string, own: StandaloneAnswers, registeredAt?: string): void {
  if (!accountHoldsEvidence(item, accountId, own, registeredAt)) {
    throw notFoundError('evidence_not_found', `Your account holds no evidence for ${imageHash}: register, time-stamp, sign or anchor it first.`);
  }
}

/** One proof as the certificate presents it (the PDF's model, lib/pdf/certificate-model.ts), named by what it proves. */
export interface CertificateProof extends PdfCertificateProof {
  id: 'timestamp' | 'pq_signature' | 'ledger' | 'device' | 'standalone_timestamp' | 'ed25519_signature';
}

/** The certificate's content for one hash: what the PDF renders, with the proofs named. */
export interface CertificateModel extends PdfCertificateModel {
  proofs: CertificateProof[];
}

export interface CertificateInputs {
  /** The evidence item as the holder may see it: its anchor only when the holder's account made it. */
  item: EvidenceItem;
  /** The holder's own registration of the hash, when it made one (never another account's). */
  registeredAt?: string | undefined;
  /** The checker's verification of the hash (verify.ts verifyEvidence). */
  verification: EvidenceVerification;
  /** The receipt (receipt.ts buildReceipt), for an anchored hash. */
  receipt: EvidenceReceipt | null;
  issuedAt: Date;
  publicBaseUrl: string;
  /** Chain name for the reader, e.g. "Polygon Amoy (chain id 80002)". */
  chainLabel: string;
  /** The TSA's subject, e.g. "CN=Evidence Anchoring TSA, O=…". */
  tsaName: string | null;
  /** The caller's own stand-alone timestamp and signature of the hash, if any. */
  standalone?: StandaloneEvidence;
}

const ATTACHMENT = 'receipt.json';
const SIGNATURE_ATTACHMENT = 'signature.json';
const TIMESTAMP_ATTACHMENT = 'timestamp.json';

/** Builds the certificate's content for one hash. */
export function buildCertificateModel(input: CertificateInputs): CertificateModel {
  const { item, verification: v, receipt } = input;
  const judged = v.verdict;
  const hash = item.image_hash;
  const times: [string, string][] = [];
  if (input.registeredAt) times.push(['Registered by your account', input.registeredAt]);
  if (isAnchored(item)) times.push(['Anchored (all proofs made)', item.anchored_at]);

  const proofs: CertificateProof[] = [];
  const absent: string[] = [];
  if (isAnchored(item) && receipt && judged) {
    const p = judged.proofs;
    // The post-quantum token (ML-DSA-65, RFC 9882), when the record has one, is the same proof made
    // twice: one card (the certificate stays within two pages), judged on both.
    const tsStatus = statusOf(p.timestamp, p.timestamp_pq);
    const pqToken = receipt.timestamp_pq;
    proofs.push({
      id: 'timestamp',
      title: 'Independent timestamp (RFC 3161)',
      status: tsStatus,
      statusText: wordsOf(
        tsStatus,
        pqToken ? 'both tokens (ECDSA and post-quantum ML-DSA-65) are signed by the time-stamping authority and name this fingerprint' : 'the token is signed by the time-stamping authority and names this fingerprint',
        p.timestamp,
        p.timestamp_pq,
      ),
      proves: 'A time-stamping authority signed that this exact fingerprint existed at the time shown. Nobody, including us, can move that time later.',
      facts: [
        ['Time (genTime)', receipt.timestamp.gen_time],
        ['Authority (TSA)', input.tsaName ?? 'named in the token'],
        ['Serial number', receipt.timestamp.serial],
        ['Policy', receipt.timestamp.policy],
        ...(pqToken ? ([['Post-quantum token', `ML-DSA-65 (RFC 9882), genTime ${pqToken.gen_time}, policy ${pqToken.policy}: timestamp_pq in receipt.json`]] as [string, string][]) : []),
      ],
      check: {
        intro: "With OpenSSL, from the attached receipt.json, the original file and root.pem, the TSA root the service publishes (not the receipt's copy):",
        commands: [
          'jq -r .timestamp.token receipt.json | base64 -d > token.tsr',
          "jq -r '.timestamp.tsa_certificates[0]' receipt.json > tsa.pem",
          'openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem -untrusted tsa.pem',
        ],
      },
    });
    const pqStatus = statusOf(p.statement, p.pq_signature, p.pq_key);
    proofs.push({
      id: 'pq_signature',
      title: 'Post-quantum signature (ML-DSA-65)',
      status: pqStatus,
      statusText: wordsOf(pqStatus, 'the statement hashes to server_hash and the ML-DSA-65 signature verifies with our published key', p.statement, p.pq_signature, p.pq_key),
      proves:
        'The service signed a statement naming this fingerprint, the time and the device, with a signature scheme (FIPS 204) designed to stay secure against quantum computers.',
      facts: [
        ['Algorithm', 'ML-DSA-65 (FIPS 204, pure, empty context)'],
        ['Key id', receipt.pq_signature.key_id],
        ['Signed message', 'the 32 bytes of server_hash'],
        ['server_hash', receipt.server_hash],
      ],
      check: {
        intro:
          'server_hash is the SHA-256 of the statement; the signature verifies with any FIPS 204 library, or offline with our open-source CLI, which checks every proof once our keys are pinned:',
        commands: [
          'jq -j .statement_canonical receipt.json | sha256sum',
          `evidence trust add ${input.publicBaseUrl}`,
          'evidence verify photo.jpg --certificate certificate.pdf --rpc $RPC_URL',
        ],
      },
    });
    const l = judged.ledger;
    const ledgerStatus = statusOf(p.ledger, p.merkle);
    proofs.push({
      id: 'ledger',
      title: 'Public ledger record',
      status: ledgerStatus,
      statusText: wordsOf(
        ledgerStatus,
        `mined in block ${l.block_number ?? '?'} with ${l.confirmations} confirmation${l.confirmations === 1 ? '' : 's'}${l.final ? ` (final since ${l.final_since ?? '?'})` : ''}, carrying ${receipt.ledger.merkle ? 'the Merkle root its inclusion path leads to' : 'this fingerprint'}`,
        p.ledger,
        p.merkle,
      ),
      proves: receipt.ledger.merkle
        ? 'The fingerprint and server_hash, as one leaf of a Merkle tree whose root was written into a public blockchain that thousands of independent computers keep; the block time bounds when it existed.'
        : 'The fingerprint and server_hash were written into a public blockchain that thousands of independent computers keep; the block time bounds when it existed.',
      facts: [
        ['Chain', input.chainLabel],
        ['Transaction', receipt.ledger.tx_hash],
        ['Block', receipt.ledger.block_number === null ? 'not yet mined' : String(receipt.ledger.block_number)],
        ['Confirmation seen', item.confirmed_at ?? 'not yet (see the explorer)'],
        ['Explorer', receipt.ledger.explorer_url],
        ...(receipt.ledger.merkle
          ? ([
              ['Batch', `leaf ${receipt.ledger.merkle.leaf_index} of ${receipt.ledger.merkle.tree_size} (RFC 6962 SHA-256 tree)`],
              ['Merkle root', receipt.ledger.merkle.root],
              ['Inclusion path', `${receipt.ledger.merkle.path.length} hashes, in the attached receipt (ledger.merkle.path)`],
            ] as [string, string][])
          : []),
      ],
      check: {
        intro: receipt.ledger.merkle
          ? 'Ask any node of the chain (its "input" must equal ASCII "MERKLE-SHA256:" followed by the Merkle root), then check the inclusion path from SHA-256(0x00 || image_hash || server_hash) to that root (evidence verify does both):'
          : 'Ask any node of the chain (its "input" must equal image_hash followed by server_hash):',
        commands: [
          `curl -s -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":["${receipt.ledger.tx_hash}"]}' $RPC_URL`,
        ],
      },
    });
    const deviceStatus = statusOf(p.device_signature, p.chain_link);
    proofs.push({
      id: 'device',
      title: 'Device signature and chain position',
      status: deviceStatus,
      statusText: wordsOf(deviceStatus, `the device's Ed25519 signature verifies and the file is entry ${receipt.device.chain_index} of the device's chain`, p.device_signature, p.chain_link),
      proves:
        "The capturing device signed the fingerprint with its own key, and the file holds a fixed place in that device's sequence: an entry cannot be removed or inserted without breaking the chain.",
      facts: [
        ['Device key (Ed25519)', receipt.device.public_key_hex],
        ['Chain position', `entry ${receipt.device.chain_index}`],
        ['chain_hash', receipt.device.chain_hash],
        ['previous_hash', receipt.device.previous_hash ?? 'none (first entry)'],
      ],
      check: {
        intro: 'With OpenSSL (Ed25519 over the 32 bytes of the fingerprint) and sha256sum:',
        commands: [
          "(printf 302a300506032b6570032100; jq -j .device.public_key_hex receipt.json) | xxd -r -p | openssl pkey -pubin -inform DER -out device.pem",
          'jq -j .image_hash receipt.json | xxd -r -p > hash.bin; jq -j .device.signature_hex receipt.json | xxd -r -p > sig.bin',
          'openssl pkeyutl -verify -pubin -inkey device.pem -rawin -in hash.bin -sigfile sig.bin',
          `(jq -j '.device.previous_hash // "${'0'.repeat(64)}"' receipt.json; jq -j .image_hash receipt.json) | xxd -r -p | sha256sum`,
        ],
      },
    });
  }
  // The caller's stand-alone proofs, attached after receipt.json: signature.json, then timestamp.json.
  const own = input.standalone ?? {};
  const more: CertificateModel['more'] = [];
  const extract = [`pdfdetach -save 1 -o ${ATTACHMENT} certificate.pdf`];
  const attach = (name: string, description: string, answer: object) => {
    more.push({ name, description, json: JSON.stringify(answer, null, 2) });
    extract.push(`pdfdetach -save ${more.length + 1} -o ${name} certificate.pdf`);
    return extract[extract.length - 1] as string;
  };
  const signatureExtract = own.signature
    ? attach(SIGNATURE_ATTACHMENT, 'Ed25519 signature answer of POST /api/v2/evidence/sign', own.signature.answer)
    : undefined;
  const timestampExtract = own.timestamp
    ? attach(TIMESTAMP_ATTACHMENT, 'RFC 3161 timestamp answer of POST /api/v2/evidence/timestamp', own.timestamp.answer)
    : undefined;
  if (own.timestamp) times.push(['Time-stamped (RFC 3161, your request)', own.timestamp.answer.gen_time]);
  if (own.signature) times.push(['Signed by the service (Ed25519, your request)', own.signature.answer.statement.signed_at]);
  if (own.timestamp && timestampExtract) {
    const t = own.timestamp;
    proofs.push({
      id: 'standalone_timestamp',
      title: isAnchored(item) ? 'Your own RFC 3161 timestamp (requested separately)' : 'Independent timestamp (RFC 3161)',
      status: t.ok ? 'verified' : 'failed',
      statusText: t.ok ? 'Checks out: the token is signed by the time-stamping authority and names this fingerprint.' : 'Does NOT check out: the token does not verify.',
      proves: 'A time-stamping authority signed that this exact fingerprint existed at the time shown. Nobody, including us, can move that time later.',
      facts: [
        ['Time (genTime)', t.answer.gen_time],
        ['Authority (TSA)', t.tsaName ?? 'named in the token'],
        ['Serial number', t.answer.serial_number],
        ['Policy', t.answer.policy],
      ],
      check: t.postQuantum
        ? {
            // docs/verify-without-us.md "Post-quantum time": `openssl ts -verify` has no ML-DSA yet; `openssl cms -verify` (3.5 or later) checks
            // the signature and the chain, and the imprint is compared with the photo's SHA-256 by hand.
            intro: `An ML-DSA-65 token: OpenSSL 3.5 or later checks it with cms -verify (ts -verify cannot yet), from the attached ${TIMESTAMP_ATTACHMENT} and root.pem, the post-quantum TSA root the service publishes (GET /api/v2/tsa/certificates?policy=${t.answer.policy}, last; not the attachment's copy); the SHA-256 printed last must be the photo's:`,
            commands: [
              timestampExtract,
              `jq -r .timestamp_token ${TIMESTAMP_ATTACHMENT} | base64 -d > token.tsr`,
              `jq -r '.tsa_certificates[0]' ${TIMESTAMP_ATTACHMENT} > tsa.pem`,
              'openssl ts -reply -in token.tsr -token_out -out token.der',
              'openssl cms -verify -inform DER -in token.der -binary -CAfile root.pem -certfile tsa.pem -purpose timestampsign -out tstinfo.der',
              "openssl asn1parse -inform DER -in tstinfo.der | grep -m1 'OCTET STRING'; sha256sum photo.jpg",
            ],
          }
        : {
            intro: `With OpenSSL, from the attached ${TIMESTAMP_ATTACHMENT}, the original file and root.pem, the TSA root the service publishes (GET /api/v2/tsa/certificates, last; not the attachment's copy):`,
            commands: [
              timestampExtract,
              `jq -r .timestamp_token ${TIMESTAMP_ATTACHMENT} | base64 -d > token.tsr`,
              'openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem',
            ],
          },
    });
  }
  if (own.signature && signatureExtract) {
    const sg = own.signature;
    const st = sg.answer.statement;
    const facts: [string, string][] = [
      ['Algorithm', 'Ed25519 (RFC 8032) over the RFC 8785 canonical statement'],
      ['Key id', sg.answer.key_id],
      ['Signed at', st.signed_at],
      ['Statement', `${st.statement_type}, SHA-256 ${st.sha256_hash}`],
      ['Issuer', st.issuer],
    ];
    if (st.device) facts.push(['Device key (Ed25519)', st.device.public_key_hex]);
    facts.push(['Signature', sg.answer.signature]);
    proofs.push({
      id: 'ed25519_signature',
      title: 'Service signature (Ed25519)',
      status: sg.ok ? 'verified' : 'failed',
      statusText: sg.ok
        ? `Checks out: the Ed25519 signature over the statement verifies with our published key ${sg.answer.key_id}.`
        : 'Does NOT check out: the statement or its Ed25519 signature does not verify.',
      proves: st.device
        ? "The service signed, at the time shown, a statement naming this fingerprint and the device's own verified signature over it."
        : 'The service signed, at the time shown, a statement naming this fingerprint. It proves what the service saw and when; it is not an independent authority.',
      facts,
      check: {
        intro: `With node:crypto, from the attached ${SIGNATURE_ATTACHMENT} and the published key set (the key whose kid is key_id):`,
        commands: [
          signatureExtract,
          `curl -s ${input.publicBaseUrl}/.well-known/jwks.json > jwks.json`,
          `node --input-type=module -e 'import { createPublicKey, verify } from "node:crypto"; import { readFileSync } from "node:fs"; ` +
            `const s = JSON.parse(readFileSync("${SIGNATURE_ATTACHMENT}", "utf8")); const jwk = JSON.parse(readFileSync("jwks.json", "utf8")).keys.find((k) => k.kid === s.key_id); ` +
            'const canon = (v) => (v && typeof v === "object" ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}` : JSON.stringify(v)); ' +
            `console.log(verify(null, Buffer.from(canon(s.statement)), createPublicKey({ key: jwk, format: "jwk" }), Buffer.from(s.signature, "base64url")) ? "Ed25519: OK" : "Ed25519: FAILED")'`,
        ],
      },
    });
  }
  if (!isAnchored(item) || !receipt) {
    if (!own.timestamp) absent.push('No RFC 3161 timestamp: an independent authority has not vouched for the time.');
    if (!own.signature) absent.push('No Ed25519 signature by the service.');
    absent.push('No post-quantum (ML-DSA-65) signature by the service.');
    absent.push('Not anchored on a public ledger.');
    absent.push('No device signature and no place in a device chain.');
  }

  const verdict = verdictOf(item, v, proofs, input.registeredAt);
  const attachmentJson = receipt
    ? JSON.stringify(receipt, null, 2)
    : JSON.stringify(
        {
          receipt_version: 1,
          image_hash: hash,
          hash_algorithm: 'SHA-256',
          registered_at: input.registeredAt ?? null,
          anchored: false,
          proofs: [],
        },
        null,
        2,
      );
  return {
    image_hash: hash,
    issued_at: input.issuedAt.toISOString(),
    verify_url: `${input.publicBaseUrl}/verify/${hash}`,
    verdict,
    times,
    proofs,
    absent,
    attachment: {
      name: ATTACHMENT,
      description: receipt ? 'Evidence receipt: every proof of this certificate, machine-readable' : 'Registration record of this hash',
      json: attachmentJson,
    },
    more,
    extract,
  };
}

function verdictOf(item: EvidenceItem, v: EvidenceVerification, proofs: CertificateProof[], registeredAt: string | undefined): CertificateModel['verdict'] {
  if (!isAnchored(item) && proofs.length > 0) {
    const kinds = proofs.map((p) => (p.id === 'standalone_timestamp' ? 'TIME-STAMPED' : 'SIGNED'));
    const when = registeredAt ? ` Your account also registered it with us on ${registeredAt}.` : '';
    if (foldStatus(proofs.map((p) => p.status)) === 'verified') {
      return {
        tone: 'ok',
        headline: `${kinds.join(' AND ')}: the proof${proofs.length > 1 ? 's' : ''} below check${proofs.length > 1 ? '' : 's'} out`,
        text: `A file whose SHA-256 fingerprint equals the one below existed, unchanged, no later than the time${proofs.length > 1 ? 's' : ''} shown.${when} It was not anchored on a public ledger: the proofs not made are listed below.`,
      };
    }
    return {
      tone: 'bad',
      headline: 'WARNING: at least one proof does NOT check out',
      text: 'Read the proofs below: the ones marked as not checking out must not be relied on.',
    };
  }
  if (!isAnchored(item)) {
    return {
      tone: 'registered',
      headline: 'REGISTERED: the fingerprint was recorded by the service',
      text: `Your account registered this file's fingerprint with us on ${registeredAt ?? 'an unknown date'}. That is our record only: no independent proof (timestamp, signature or ledger) was made for it by your account.`,
    };
  }
  // An anchored record: the one verdict (verdict.ts), in words.
  const status = v.verdict?.status ?? 'failed';
  if (status === 'verified') {
    return {
      tone: 'ok',
      headline: 'VERIFIED: every proof below checks out',
      text: `A file whose SHA-256 fingerprint equals the one below existed, unchanged, no later than the times shown. Each proof holds ${v.verdict ? describeSigningTime(v.verdict.as_of) : ''}, with the keys valid then, and can be checked without us.`,
    };
  }
  if (status === 'pending') {
    return {
      tone: 'pending',
      headline: 'PROOFS MADE: not every proof is established yet',
      text: `${v.verdict?.summary ?? ''} Check it again later: the verify page shows the verdict of today.`,
    };
  }
  return {
    tone: 'bad',
    headline: 'WARNING: at least one proof does NOT check out',
    text: `${v.verdict?.summary ?? ''} Read the proofs below: the ones marked as not checking out must not be relied on.`,
  };
}

/** The certificate's status of a group of proofs of the one verdict, by the one folding rule (verdict.ts foldStatus). */
function statusOf(...results: ProofResult[]): ProofStatus {
  return foldStatus(results.map((r) => r.state));
}

/** One line: what checks out, or the verdict's reason for what does not (yet). */
function wordsOf(status: ProofStatus, holds: string, ...results: ProofResult[]): string {
  if (status === 'verified') return `Checks out: ${holds}.`;
  const folded = foldProofs(results.map((r) => [r, r.state] as const));
  const bad = folded.failed[0] ?? folded.open[0];
  return status === 'failed' ? `Does NOT check out: ${bad?.reason ?? 'see the verify page'}.` : `Not established yet when this certificate was issued: ${bad?.reason ?? 'see the verify page'}.`;
}

/** What {@link issueCertificate} needs; lib/deps/certificate.ts wires it. */
export interface CertificateDeps {
  getItem(imageHash: string): Promise<EvidenceItem | undefined>;
  /** The account's own registration of the hash (`item`: for data from before per-account registrations). */
  getRegistration(imageHash: string, accountId: string, item?: EvidenceItem): Promise<{ registeredAt: string } | undefined>;
  /** The account's stand-alone answers on the hash, from their own items. */
  getStandalone(imageHash: string, accountId: string): Promise<StandaloneAnswers>;
  /** The one checker's verification of the hash (verify.ts verifyEvidence). */
  verify(imageHash: string): Promise<EvidenceVerification>;
  receiptOf(item: AnchoredEvidence): EvidenceReceipt;
  /** Lays out, attaches and signs the PDF (lib/pdf). */
  render(model: CertificateModel): Promise<Uint8Array>;
  /** The TSA's subject name from the receipt's TSA certificate, for the reader. */
  tsaNameOf(receipt: EvidenceReceipt): string | null;
  /** Checks the account's stored stand-alone answers (as the offline verifier does) for the reader. */
  checkStandalone(imageHash: string, answers: { timestamp?: unknown; signature?: unknown }): Promise<StandaloneEvidence>;
  clock(): Date;
  publicBaseUrl: string;
  chainLabel: string;
}

/**
 * The signed PDF certificate of a hash the account holds evidence for (404 otherwise, the same for
 * another account's hash and an unknown one).
 */
export async function issueCertificate(deps: CertificateDeps, imageHash: string, accountId: string): Promise<{ pdf: Uint8Array; model: CertificateModel }> {
  const [item, stored] = await Promise.all([deps.getItem(imageHash), deps.getStandalone(imageHash, accountId)]);
  const registeredAt = (await deps.getRegistration(imageHash, accountId, item))?.registeredAt;
  const own = standaloneAnswers(item, accountId, stored);
  requireHeldEvidence(item, accountId, imageHash, own, registeredAt);
  // The holder's facts only (decisions.md "Starter features"): another account's anchor, its proofs
  // and its device key never appear on this account's certificate, even when the hash is anchored.
  const anchor = anchoredBy(item, accountId) ? item : undefined;
  const verification: EvidenceVerification = anchor
    ? await deps.verify(imageHash)
    : { image_hash: imageHash, found: true, registered_at: null, anchored: false, record: null, verdict: null };
  const receipt = anchor ? deps.receiptOf(anchor) : null;
  const standalone = await deps.checkStandalone(imageHash, own);
  const model = buildCertificateModel({
    // A hash only registered, time-stamped or signed by this account: the certificate shows those proofs alone.
    item: anchor ?? ({ image_hash: imageHash } as EvidenceItem),
    registeredAt,
    verification,
    receipt,
    issuedAt: deps.clock(),
    publicBaseUrl: deps.publicBaseUrl,
    chainLabel: deps.chainLabel,
    tsaName: receipt ? deps.tsaNameOf(receipt) : null,
    standalone,
  });
  return { pdf: await deps.render(model), model };
}
