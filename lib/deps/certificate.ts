import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type PdfSigningIdentity, buildCadesDetached } from '../crypto/pdf-sign/cades.js';
import { pdfSignerFiles } from '../crypto/pdf-sign/files.js';
import { KmsTsaKeySigner, WebCryptoTsaKeySigner } from '../crypto/tsa/key-signer.js';
import { importPrivateKey } from '../crypto/tsa/certificates.js';
import { pemToDer } from '../crypto/tsa/pem.js';
import { extractTimestampToken } from '../crypto/tsa/verify.js';
import { rawPublicKeyOf, windowOfJwk } from '../crypto/jwk.js';
import { describeSubject } from '../crypto/tsa/x509-verify.js';
import type { CertificateDeps, StandaloneEvidence } from '../evidence/certificate.js';
import type { SignatureResponse } from '../evidence/signature.js';
import { judgeStandaloneSignature, verifyStandaloneTimestamp } from '../evidence/standalone-verdict.js';
import type { HashTimestamp } from '../evidence/timestamp.js';
import { buildReceipt } from '../evidence/receipt.js';
import { verifyEvidence } from '../evidence/verify.js';
import { renderCertificate } from '../pdf/certificate-pdf.js';
import { signPdf } from '../pdf/sign.js';
import { getTsa } from './anchoring.js';
import { getConfig } from './core.js';
import { getEvidenceRepo } from './evidence.js';
import { sha256Hex } from '../crypto/hash.js';
import { assertNotRetired } from './key-registry.js';
import { getKmsClient } from './kms.js';
import { lazy } from './lazy.js';
import { getPublishedKeys } from './signing.js';
import { getVerifyDeps } from './verification.js';

/**
 * The PDF certificate's part of the composition root: the PDF signing key behind the signer port
 * (a P-256 key in DATA_DIR locally, an ECC_NIST_P256 key in KMS in production; the same port and
 * adapters as the TSA key), its certificate and root, and the TSA that stamps the signature.
 * Only functions/v2/evidence-certificate.ts imports this module (pdf-lib stays out of the others).
 */
export const getPdfSigningIdentity: () => Promise<PdfSigningIdentity> = /* @__PURE__ */ lazy(async () => {
  const { pdfSigner, tsa } = getConfig();
  const rootFile = tsa.rootFile ?? path.join(tsa.dir, 'root.pem');
  const local = pdfSignerFiles(pdfSigner.dir);
  const [certPem, rootPem] = await Promise.all([readFile(pdfSigner.certFile ?? local.cert, 'utf8'), readFile(rootFile, 'utf8')]);
  const signer = pdfSigner.kmsKeyId
    ? new KmsTsaKeySigner(getKmsClient(), pdfSigner.kmsKeyId)
    : new WebCryptoTsaKeySigner(await importPrivateKey(await readFile(local.key, 'utf8')));
  const identity: PdfSigningIdentity = { signer, certificateDer: pemToDer(certPem, 'CERTIFICATE'), chainDer: [pemToDer(rootPem, 'CERTIFICATE')] };
  // A certificate the registry retired never signs again (decisions.md "Key validity windows").
  await assertNotRetired('pdf-signing', `x509:${sha256Hex(identity.certificateDer)}`);
  // Fails here, at first use, when the key and the certificate do not belong together.
  await buildCadesDetached(new Uint8Array(0), identity);
  return identity;
});

const NETWORK_LABEL: Record<string, string> = {
  local: 'local development chain',
  'polygon-amoy': 'Polygon Amoy testnet',
  polygon: 'Polygon PoS mainnet',
};

/** The TSA's subject from a receipt's leaf certificate (the one formatter: crypto/tsa describeSubject). */
function tsaNameOf(pems: string[]): string | null {
  return pems[0] ? describeSubject(pems[0]) : null;
}

/**
 * The account's stand-alone answers as stored, checked by the same checkers as the offline
 * verifier: the token against the hash and the TSA roots we vouch for (classic and post-quantum),
 * the statement and its Ed25519 signature against our published key of its kid. A malformed answer is a failed proof.
 */
async function checkStandalone(imageHash: string, answers: { timestamp?: unknown; signature?: unknown }): Promise<StandaloneEvidence> {
  const out: StandaloneEvidence = {};
  if (answers.timestamp !== undefined) {
    // The answer's token is the classic TSA's or, when the request chose its policy, the post-quantum one's.
    const deps = getVerifyDeps();
    const roots = [...(await deps.tsaRoots()), ...((await deps.tsaPqRoots?.()) ?? [])];
    const verdict = await verifyStandaloneTimestamp(answers.timestamp, imageHash, roots, true, (await deps.tsaRetirements?.()) ?? []);
    const answer = answers.timestamp as HashTimestamp;
    out.timestamp = { answer, ok: verdict.state === 'holds', tsaName: verdict.tsa_name, postQuantum: answer.policy === getConfig().tsa.pq?.policyOid };
  }
  if (answers.signature !== undefined) {
    const answer = answers.signature as SignatureResponse;
    const jwk = (await getPublishedKeys()).find((k) => k.kid === answer.key_id);
    const raw = jwk ? rawPublicKeyOf(jwk) : undefined;
    out.signature = { answer, ok: judgeStandaloneSignature(answer, imageHash, raw?.algorithm === 'Ed25519' ? raw.publicKey : undefined, jwk ? windowOfJwk(jwk) : undefined).state === 'holds' };
  }
  return out;
}

export function getCertificateDeps(): CertificateDeps {
  const config = getConfig();
  const issuer = { name: 'Evidence Anchoring Service', url: config.publicBaseUrl };
  return {
    getItem: (hash) => getEvidenceRepo().get(hash),
    getStandalone: (hash, accountId) => getEvidenceRepo().getStandalone(hash, accountId),
    getRegistration: (hash, accountId, item) => getEvidenceRepo().getRegistration(hash, accountId, item),
    verify: (hash) => verifyEvidence(getVerifyDeps(), hash),
    receiptOf: (item) => buildReceipt(item, config.ledger.explorerTxUrl, config.publicBaseUrl),
    tsaNameOf: (receipt) => tsaNameOf(receipt.timestamp.tsa_certificates),
    checkStandalone,
    render: async (model) => {
      const [doc, identity, tsa] = await Promise.all([renderCertificate(model, issuer), getPdfSigningIdentity(), getTsa()]);
      return signPdf(
        doc,
        { name: issuer.name, reason: `Evidence certificate for SHA-256 ${model.image_hash}`, location: issuer.url, contactInfo: issuer.url, signingTime: new Date(model.issued_at) },
        identity,
        async (imprint) => extractTimestampToken((await tsa.timestamp(imprint)).response),
      );
    },
    clock: () => new Date(),
    publicBaseUrl: config.publicBaseUrl,
    chainLabel: `${NETWORK_LABEL[config.ledger.network] ?? config.ledger.network} (chain id ${config.ledger.chainId})`,
  };
}
