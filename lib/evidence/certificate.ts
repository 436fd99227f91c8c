/**
 * What the PDF evidence certificate says (CONTRACT "Starter features", last item): the hash, the
 * times, each proof present (what it proves, its precise values, the command that checks it
 * without this service), the proofs not present, and the machine-readable file attached to it.
 *
 * Pure: no PDF, no HTTP, no I/O. The verdicts come from the one checker (verify.ts, which asks
 * proof-check.ts); this module only words them. The layout is lib/pdf/certificate-pdf.ts's.
 */
import { notFoundError } from '../errors.js';
import type { EvidenceReceipt } from './receipt.js';
import type { AnchoredEvidence, EvidenceItem } from './records.js';
import { isAnchored } from './records.js';
import type { EvidenceVerification } from './verify.js';

/** Whether the caller's account holds evidence for the item: it registered or anchored the hash. */
export function accountHoldsEvidence(item: EvidenceItem | undefined, accountId: string): item is EvidenceItem {
  if (!item) return false;
  return item.registered_by === accountId || (isAnchored(item) && item.account_id === accountId);
}

/** The item when the account holds evidence for it; else 404, the same for another account's hash and an unknown one. */
export function requireHeldEvidence(item: EvidenceItem | undefined, accountId: string, imageHash: string): EvidenceItem {
  if (!accountHoldsEvidence(item, accountId)) {
    throw notFoundError('evidence_not_found', `Your account holds no evidence for ${imageHash}: register or anchor it first.`);
  }
  return item;
}

export type ProofStatus = 'verified' | 'failed' | 'pending';

/** One proof as the certificate presents it. */
export interface CertificateProof {
  id: 'timestamp' | 'pq_signature' | 'ledger' | 'device';
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

export interface CertificateModel {
  image_hash: string;
  issued_at: string;
  verify_url: string;
  verdict: { tone: 'ok' | 'pending' | 'bad' | 'registered'; headline: string; text: string };
  /** Registration and anchoring times, label and value. */
  times: [string, string][];
  proofs: CertificateProof[];
  /** Proofs this hash does not have, said plainly. */
  absent: string[];
  /** The attached file: its name and content. */
  attachment: { name: string; description: string; json: string };
  /** How to take the attached file out of the PDF. */
  extract: string[];
}

export interface CertificateInputs {
  item: EvidenceItem;
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
}

const ATTACHMENT = 'receipt.json';

/** Builds the certificate's content for one hash. */
export function buildCertificateModel(input: CertificateInputs): CertificateModel {
  const { item, verification: v, receipt } = input;
  const hash = item.image_hash;
  const times: [string, string][] = [];
  if (item.registered_at) times.push(['Registered', item.registered_at]);
  if (isAnchored(item)) times.push(['Anchored (all proofs made)', item.anchored_at]);

  const proofs: CertificateProof[] = [];
  const absent: string[] = [];
  if (isAnchored(item) && receipt) {
    const tsOk = v.checks.timestamp;
    proofs.push({
      id: 'timestamp',
      title: 'Independent timestamp (RFC 3161)',
      status: tsOk ? 'verified' : 'failed',
      statusText: tsOk ? 'Checks out: the token is signed by the time-stamping authority and names this fingerprint.' : 'Does NOT check out: the token does not verify.',
      proves: 'A time-stamping authority signed that this exact fingerprint existed at the time shown. Nobody, including us, can move that time later.',
      facts: [
        ['Time (genTime)', receipt.timestamp.gen_time],
        ['Authority (TSA)', input.tsaName ?? 'named in the token'],
        ['Serial number', receipt.timestamp.serial],
        ['Policy', receipt.timestamp.policy],
      ],
      check: {
        intro: 'With OpenSSL, from the attached receipt.json and the original file:',
        commands: [
          'jq -r .timestamp.token receipt.json | base64 -d > token.tsr',
          "jq -r '.timestamp.tsa_certificates[0]' receipt.json > tsa.pem",
          "jq -r '.timestamp.tsa_certificates[-1]' receipt.json > root.pem",
          'openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem -untrusted tsa.pem',
        ],
      },
    });
    const pqOk = v.checks.statement && v.checks.pq_signature && v.checks.pq_key_trusted;
    proofs.push({
      id: 'pq_signature',
      title: 'Post-quantum signature (ML-DSA-65)',
      status: pqOk ? 'verified' : 'failed',
      statusText: pqOk
        ? 'Checks out: the statement hashes to server_hash and the ML-DSA-65 signature verifies with our published key.'
        : 'Does NOT check out: the statement or its ML-DSA-65 signature does not verify.',
      proves:
        'The service signed a statement naming this fingerprint, the time and the device, with a signature scheme (FIPS 204) designed to stay secure against quantum computers.',
      facts: [
        ['Algorithm', 'ML-DSA-65 (FIPS 204, pure, empty context)'],
        ['Key id', receipt.pq_signature.key_id],
        ['Signed message', 'the 32 bytes of server_hash'],
        ['server_hash', receipt.server_hash],
      ],
      check: {
        intro: 'server_hash is the SHA-256 of the statement; the signature verifies with any FIPS 204 library, or offline with our open-source CLI:',
        commands: ['jq -j .statement_canonical receipt.json | sha256sum', 'evidence verify photo.jpg --certificate certificate.pdf'],
      },
    });
    const l = v.checks.ledger;
    const ledgerStatus: ProofStatus = l.valid ? 'verified' : l.status === 'pending' || l.status === 'not_found' ? 'pending' : 'failed';
    proofs.push({
      id: 'ledger',
      title: 'Public ledger record',
      status: ledgerStatus,
      statusText: l.valid
        ? `Checks out: mined in block ${l.block_number ?? '?'} with ${l.confirmations} confirmation${l.confirmations === 1 ? '' : 's'}, carrying this fingerprint.`
        : l.status === 'pending' || l.status === 'not_found'
          ? 'Not yet confirmed on the ledger when this certificate was issued; check it again later.'
          : 'Does NOT check out: the transaction failed or does not carry this fingerprint.',
      proves: 'The fingerprint and server_hash were written into a public blockchain that thousands of independent computers keep; the block time bounds when it existed.',
      facts: [
        ['Chain', input.chainLabel],
        ['Transaction', receipt.ledger.tx_hash],
        ['Block', receipt.ledger.block_number === null ? 'not yet mined' : String(receipt.ledger.block_number)],
        ['Confirmation seen', item.confirmed_at ?? 'not yet (see the explorer)'],
        ['Explorer', receipt.ledger.explorer_url],
      ],
      check: {
        intro: 'Ask any node of the chain (its "input" must equal image_hash followed by server_hash):',
        commands: [
          `curl -s -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":["${receipt.ledger.tx_hash}"]}' $RPC_URL`,
        ],
      },
    });
    const deviceOk = v.checks.device_signature && v.checks.chain_hash;
    proofs.push({
      id: 'device',
      title: 'Device signature and chain position',
      status: deviceOk ? 'verified' : 'failed',
      statusText: deviceOk
        ? `Checks out: the device's Ed25519 signature verifies and the file is entry ${receipt.device.chain_index} of the device's chain.`
        : "Does NOT check out: the device's signature or chain hash does not verify.",
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
  } else {
    absent.push('No RFC 3161 timestamp: an independent authority has not vouched for the time.');
    absent.push('No post-quantum (ML-DSA-65) signature by the service.');
    absent.push('Not anchored on a public ledger.');
    absent.push('No device signature and no place in a device chain.');
  }

  const verdict = verdictOf(item, v, proofs);
  const attachmentJson = receipt
    ? JSON.stringify(receipt, null, 2)
    : JSON.stringify(
        {
          receipt_version: 1,
          image_hash: hash,
          hash_algorithm: 'SHA-256',
          registered_at: item.registered_at ?? null,
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
    extract: [`pdfdetach -save 1 -o ${ATTACHMENT} certificate.pdf`],
  };
}

function verdictOf(item: EvidenceItem, v: EvidenceVerification, proofs: CertificateProof[]): CertificateModel['verdict'] {
  if (!isAnchored(item)) {
    return {
      tone: 'registered',
      headline: 'REGISTERED: the fingerprint was recorded by the service',
      text: `This file's fingerprint was registered with us on ${item.registered_at ?? 'an unknown date'}. That is our record only: no independent proof (timestamp, signature or ledger) was made for it.`,
    };
  }
  if (v.verified) {
    return {
      tone: 'ok',
      headline: 'VERIFIED: every proof below checks out',
      text: 'A file whose SHA-256 fingerprint equals the one below existed, unchanged, no later than the times shown. Each proof can be checked without us.',
    };
  }
  if (proofs.every((p) => p.status !== 'failed')) {
    return {
      tone: 'pending',
      headline: 'PROOFS MADE: the ledger record is still being confirmed',
      text: 'The signature, the timestamp and the device proofs check out; the ledger transaction was not yet confirmed when this certificate was issued.',
    };
  }
  return {
    tone: 'bad',
    headline: 'WARNING: at least one proof does NOT check out',
    text: 'Read the proofs below: the ones marked as not checking out must not be relied on.',
  };
}

/** What {@link issueCertificate} needs; lib/deps/certificate.ts wires it. */
export interface CertificateDeps {
  getItem(imageHash: string): Promise<EvidenceItem | undefined>;
  /** The one checker's verification of the hash (verify.ts verifyEvidence). */
  verify(imageHash: string): Promise<EvidenceVerification>;
  receiptOf(item: AnchoredEvidence): EvidenceReceipt;
  /** Lays out, attaches and signs the PDF (lib/pdf). */
  render(model: CertificateModel): Promise<Uint8Array>;
  /** The TSA's subject name from the receipt's TSA certificate, for the reader. */
  tsaNameOf(receipt: EvidenceReceipt): string | null;
  clock(): Date;
  publicBaseUrl: string;
  chainLabel: string;
}

/**
 * The signed PDF certificate of a hash the account holds evidence for (404 otherwise, the same for
 * another account's hash and an unknown one).
 */
export async function issueCertificate(deps: CertificateDeps, imageHash: string, accountId: string): Promise<{ pdf: Uint8Array; model: CertificateModel }> {
  const item = requireHeldEvidence(await deps.getItem(imageHash), accountId, imageHash);
  const verification = await deps.verify(imageHash);
  const receipt = isAnchored(item) ? deps.receiptOf(item) : null;
  const model = buildCertificateModel({
    item,
    verification,
    receipt,
    issuedAt: deps.clock(),
    publicBaseUrl: deps.publicBaseUrl,
    chainLabel: deps.chainLabel,
    tsaName: receipt ? deps.tsaNameOf(receipt) : null,
  });
  return { pdf: await deps.render(model), model };
}
