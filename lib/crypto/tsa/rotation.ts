/**
 * Rotation of the embedded TSAs' keys in their directory (DATA_DIR/tsa locally): a new leaf under
 * the same root, or a new root with a new leaf, for the classic (ECDSA P-256) or the post-quantum
 * (ML-DSA-65) TSA. The certificates that stop signing are recorded in the history (history.ts)
 * with the moment of the rotation, so that every token they signed before still verifies (their
 * roots stay anchors) and none dated after it does.
 *
 * Order, so that a crash leaves something that verifies: the new key and certificate are written
 * beside the current ones, the history is written with the old certificates retired, and only
 * then are the new files renamed over the current ones. The service holds its TSA in memory: it
 * must not run during a rotation (the admin CLI refuses while the API answers), or it would go on
 * signing with a retired key until it restarts.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { generateTsaCertificates, issueTsaCertificate } from './certificates.js';
import { pqTsaFiles, tsaFiles } from './files.js';
import { type TsaHistory, type TsaKind, readTsaHistory, retire, tsaCertificateEntry, writeTsaHistory } from './history.js';
import { generatePqTsaCertificates, issuePqTsaCertificate } from './pq-certificates.js';

export interface RotationOptions {
  /** The TSA directory (DATA_DIR/tsa). */
  dir: string;
  /** The history file (TSA_HISTORY_FILE, default DATA_DIR/tsa/history.json). */
  historyFile: string;
  kind: TsaKind;
  /** The moment of the rotation: the old certificates' retirement and the new ones' start (default now). */
  now?: Date;
  /** Leaf validity in years (default 10, never past the root's). */
  tsaValidityYears?: number;
  /** Root validity in years (default 20). */
  rootValidityYears?: number;
}

/** What a rotation did, for the operator (no key material). */
export interface RotationResult {
  kind: TsaKind;
  rotated: 'leaf' | 'root';
  at: string;
  retired: { role: 'root' | 'leaf'; sha256: string; subject: string; not_after: string }[];
  current: { role: 'root' | 'leaf'; sha256: string; subject: string; not_before: string; not_after: string }[];
  history_file: string;
}

function filesOf(kind: TsaKind, dir: string) {
  return kind === 'pq' ? pqTsaFiles(dir) : tsaFiles(dir);
}

/** A new leaf under the current root; the old leaf is retired. */
export async function rotateTsaLeaf(options: RotationOptions): Promise<RotationResult> {
  const now = options.now ?? new Date();
  const files = filesOf(options.kind, options.dir);
  const [rootCertPem, rootKeyPem, oldLeafPem] = await Promise.all([readFile(files.rootCert, 'utf8'), readFile(files.rootKey, 'utf8'), readFile(files.tsaCert, 'utf8')]);
  const validity = options.tsaValidityYears !== undefined ? { tsaValidityYears: options.tsaValidityYears } : {};
  const issued =
    options.kind === 'pq'
      ? await issuePqTsaCertificate({ rootCertPem, rootKey: rootKeyPem, now, ...validity })
      : await issueTsaCertificate({ rootCertPem, rootKeyPkcs8Pem: rootKeyPem, now, ...validity });
  if (!issued.tsaKeyPkcs8Pem) throw new Error('the new leaf came without its key');
  const history = retire(await readTsaHistory(options.historyFile), [{ pem: oldLeafPem, kind: options.kind, role: 'leaf' }], now);
  await commit(options, history, files, { tsaCert: { text: issued.tsaCertPem, mode: 0o644 }, tsaKey: { text: issued.tsaKeyPkcs8Pem, mode: 0o600 } });
  return result(options, 'leaf', now, history, [oldLeafPem], { root: rootCertPem, leaf: issued.tsaCertPem });
}

/** A new root and a new leaf under it; the old root and leaf are retired (the old root stays an anchor for what it signed before). */
export async function rotateTsaRoot(options: RotationOptions): Promise<RotationResult> {
  const now = options.now ?? new Date();
  const files = filesOf(options.kind, options.dir);
  const [oldRootPem, oldLeafPem] = await Promise.all([readFile(files.rootCert, 'utf8'), readFile(files.tsaCert, 'utf8')]);
  const validity = {
    now,
    ...(options.tsaValidityYears !== undefined ? { tsaValidityYears: options.tsaValidityYears } : {}),
    ...(options.rootValidityYears !== undefined ? { rootValidityYears: options.rootValidityYears } : {}),
  };
  const bundle = options.kind === 'pq' ? await generatePqTsaCertificates(validity) : await generateTsaCertificates(validity);
  const history = retire(
    await readTsaHistory(options.historyFile),
    [
      { pem: oldLeafPem, kind: options.kind, role: 'leaf' },
      { pem: oldRootPem, kind: options.kind, role: 'root' },
    ],
    now,
  );
  await commit(options, history, files, {
    rootCert: { text: bundle.rootCertPem, mode: 0o644 },
    rootKey: { text: bundle.rootKeyPkcs8Pem, mode: 0o600 },
    tsaCert: { text: bundle.tsaCertPem, mode: 0o644 },
    tsaKey: { text: bundle.tsaKeyPkcs8Pem, mode: 0o600 },
  });
  return result(options, 'root', now, history, [oldLeafPem, oldRootPem], { root: bundle.rootCertPem, leaf: bundle.tsaCertPem });
}

async function commit(options: RotationOptions, history: TsaHistory, files: Record<string, string>, contents: Record<string, { text: string; mode: number }>): Promise<void> {
  // Staged first, the history next, the swap last (see the module's comment).
  const staged: [string, string][] = [];
  for (const [name, { text, mode }] of Object.entries(contents)) {
    const target = files[name] as string;
    const tmp = `${target}.${process.pid}.new`;
    await writeFile(tmp, text, { mode });
    staged.push([tmp, target]);
  }
  await writeTsaHistory(options.historyFile, history);
  for (const [tmp, target] of staged) await rename(tmp, target);
}

function result(options: RotationOptions, rotated: 'leaf' | 'root', at: Date, history: TsaHistory, oldPems: string[], current: { root: string; leaf: string }): RotationResult {
  const oldShas = oldPems.map((pem) => tsaCertificateEntry(pem, options.kind, 'leaf', at).sha256);
  const entry = (pem: string, role: 'root' | 'leaf') => {
    const e = tsaCertificateEntry(pem, options.kind, role, null);
    return { role, sha256: e.sha256, subject: e.subject, not_before: e.not_before, not_after: e.not_after };
  };
  return {
    kind: options.kind,
    rotated,
    at: at.toISOString(),
    retired: history.retired.filter((e) => oldShas.includes(e.sha256)).map((e) => ({ role: e.role, sha256: e.sha256, subject: e.subject, not_after: e.not_after })),
    current: [entry(current.leaf, 'leaf'), entry(current.root, 'root')],
    history_file: options.historyFile,
  };
}
