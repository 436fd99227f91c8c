/**
 * `npm run admin -- rotate-tsa-leaf | rotate-tsa-root [--pq]`: rotates the local embedded TSA's
 * key (DATA_DIR/tsa) with lib/crypto/tsa/rotation.ts, after checking that it is the local TSA and
 * that npm start is not running (lib/cli/stack-stopped.ts: it holds the TSA in memory and would go
 * on signing with the retired key). Production keys are in KMS: docs/runbook.md "Rotating the TSA keys".
 */
import { readFile, writeFile } from 'node:fs/promises';
import { getConfig } from '../deps/core.js';
import { stackHoldsPort } from './stack-stopped.js';
import { mlDsa65PublicKeyFromSpki } from '../crypto/ml-dsa.js';
import { type TsaHistory, type TsaKind, readTsaHistory, retire, tsaCertificateEntry, writeTsaHistory } from '../crypto/tsa/history.js';
import { issuePqTsaCertificate } from '../crypto/tsa/pq-certificates.js';
import { type RotationResult, rotateTsaLeaf, rotateTsaRoot } from '../crypto/tsa/rotation.js';

/** A rotation the CLI will not do, with the reason (printed as it is, exit 1). */
export class TsaRotationRefused extends Error {
  override readonly name = 'TsaRotationRefused';
}

export async function rotateTsa(what: 'leaf' | 'root', kind: TsaKind, now?: Date): Promise<RotationResult> {
  const config = getConfig();
  if (config.tsa.scheme !== 'embedded') throw new TsaRotationRefused('TSA_SCHEME is remote: the service has no TSA key of its own to rotate');
  if (kind === 'classic' && config.tsa.kmsKeyId) throw new TsaRotationRefused('the TSA key is in KMS (TSA_KMS_KEY_ID): rotate it as docs/runbook.md "Rotating the TSA keys" says');
  if (kind === 'pq' && !config.tsa.pq) throw new TsaRotationRefused('the post-quantum TSA is off (TSA_PQ=off, or AWS without TSA_PQ_KMS_KEY_ID)');
  if (kind === 'pq' && config.tsa.pq?.kmsKeyId) throw new TsaRotationRefused('the post-quantum TSA key is in KMS (TSA_PQ_KMS_KEY_ID): rotate it as docs/runbook.md "Rotating the TSA keys" says');
  if (await stackHoldsPort(config)) {
    throw new TsaRotationRefused(`port ${config.port} (PORT) on ${config.host} is in use: stop npm start first (it holds the TSA key in memory and would sign with the retired one), then start it again after the rotation`);
  }
  const options = { dir: config.tsa.dir, historyFile: config.tsa.historyFile, kind, ...(now ? { now } : {}) };
  return what === 'root' ? rotateTsaRoot(options) : rotateTsaLeaf(options);
}

/**
 * `record-tsa-retirement <cert.pem> --kind classic|pq --role leaf|root [--history FILE] [--at ISO]`:
 * records in a TSA history that a certificate stopped signing (production: after its KMS key was
 * disabled, docs/runbook.md "Rotating the TSA keys"). Tokens it signed before `at` keep verifying;
 * any dated after fail.
 */
export async function recordTsaRetirement(options: { certFile: string; kind: TsaKind; role: 'leaf' | 'root'; historyFile?: string; at?: Date }): Promise<TsaHistory> {
  const historyFile = options.historyFile ?? getConfig().tsa.historyFile;
  const pem = await readFile(options.certFile, 'utf8');
  const at = options.at ?? new Date();
  if (Number.isNaN(at.getTime())) throw new Error('--at is not a date (ISO 8601, e.g. 2027-01-31T12:00:00Z)');
  const history = retire(await readTsaHistory(historyFile), [{ pem, kind: options.kind, role: options.role }], at);
  await writeTsaHistory(historyFile, history);
  return history;
}

/**
 * `issue-pq-tsa-cert --root-cert pq-root.pem --root-key pq-root.key.pem --public-key pub.der --out pq-tsa.pem`:
 * the post-quantum TSA leaf (RFC 9881, RFC 3161 §2.3 profile) for a public key held elsewhere (the
 * SubjectPublicKeyInfo DER that `aws kms get-public-key` gives for a key of key spec ML_DSA_65),
 * signed on the offline machine with the ML-DSA-65 root's seed. OpenSSL 3.0 cannot do this; 3.5's
 * `openssl x509 -new -force_pubkey` can too.
 */
export async function issuePqTsaCertificateFor(options: { rootCertFile: string; rootKeyFile: string; publicKeyFile: string; outFile: string; now?: Date }): Promise<{ sha256: string; subject: string; not_after: string }> {
  const [rootCertPem, rootKey, spki] = await Promise.all([readFile(options.rootCertFile, 'utf8'), readFile(options.rootKeyFile, 'utf8'), readFile(options.publicKeyFile)]);
  const issued = await issuePqTsaCertificate({ rootCertPem, rootKey, tsaPublicKey: mlDsa65PublicKeyFromSpki(new Uint8Array(spki)), ...(options.now ? { now: options.now } : {}) });
  await writeFile(options.outFile, issued.tsaCertPem, { mode: 0o644 });
  const entry = tsaCertificateEntry(issued.tsaCertPem, 'pq', 'leaf', null);
  return { sha256: entry.sha256, subject: entry.subject, not_after: entry.not_after };
}
