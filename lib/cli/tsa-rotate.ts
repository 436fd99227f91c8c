/**
 * `npm run admin -- rotate-tsa-leaf | rotate-tsa-root [--pq]`: rotates the local embedded TSA's
 * key (DATA_DIR/tsa) with lib/crypto/tsa/rotation.ts, after checking that it is the local TSA and
 * that the API is not running on it (it holds the TSA in memory and would go on signing with the
 * retired key). Production keys are in KMS: docs/runbook.md "Rotating the TSA keys".
 */
import { getConfig } from '../deps/core.js';
import { type RotationResult, rotateTsaLeaf, rotateTsaRoot } from '../crypto/tsa/rotation.js';
import type { TsaKind } from '../crypto/tsa/history.js';

export async function rotateTsa(what: 'leaf' | 'root', kind: TsaKind, now?: Date): Promise<RotationResult> {
  const config = getConfig();
  if (config.tsa.scheme !== 'embedded') throw new Error('TSA_SCHEME is remote: the service has no TSA key of its own to rotate');
  if (kind === 'classic' && config.tsa.kmsKeyId) throw new Error('the TSA key is in KMS (TSA_KMS_KEY_ID): rotate it as docs/runbook.md "Rotating the TSA keys" says');
  if (kind === 'pq' && !config.tsa.pq) throw new Error('the post-quantum TSA is off (TSA_PQ=off, or AWS without TSA_PQ_KMS_KEY_ID)');
  if (kind === 'pq' && config.tsa.pq?.kmsKeyId) throw new Error('the post-quantum TSA key is in KMS (TSA_PQ_KMS_KEY_ID): rotate it as docs/runbook.md "Rotating the TSA keys" says');
  if (await apiAnswers(config.host, config.port)) {
    throw new Error(`the API answers on ${config.host}:${config.port}: stop npm start first (it holds the TSA key in memory and would sign with the retired one), then start it again after the rotation`);
  }
  const options = { dir: config.tsa.dir, historyFile: config.tsa.historyFile, kind, ...(now ? { now } : {}) };
  return what === 'root' ? rotateTsaRoot(options) : rotateTsaLeaf(options);
}

/** Whether GET /api/v1/health answers on the configured address (one second at most). */
async function apiAnswers(host: string, port: number): Promise<boolean> {
  const where = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  try {
    await fetch(`http://${where}:${port}/api/v1/health`, { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}
