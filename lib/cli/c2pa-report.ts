/**
 * What `evidence verify` shows of a photo's Content Credentials: the official reader's verdict
 * (c2pa-rs in @contentauth/c2pa-wasm) on the C2PA manifest, next to our proofs and apart from
 * them. Its state, the signer, the signing time its time-stamp vouches for, and whether our TSA
 * made that time-stamp: the reader is given our TSA roots, and only those, as its `tsa` trust
 * list, so `timeStamp.trusted` means a token of our TSA (docs/c2pa.md "Reading it").
 *
 * The reader's verdict never changes ours (the receipt's proofs and the exit code): a photo can
 * carry valid Content Credentials and no anchor, or an anchor and broken credentials.
 */
import { C2PA_SDK, type ManifestStore, type ValidationStatus, readJpeg, readerContext } from './c2pa-sdk.js';

export interface C2paReport {
  reader: string;
  /** `Trusted`, `Valid` or `Invalid` (C2PA 2.1 §14.3), or `unreadable` when the reader refused the file. */
  state: string;
  signer?: string;
  issuer?: string;
  /** The signing time: the time-stamp's genTime when the reader validated one (C2PA 2.1 §15.8). */
  time?: string;
  /** Our TSA made the time-stamp (true), another did (false), or nobody can say (undefined: no time-stamp, or our root not pinned). */
  our_tsa?: boolean;
  /** The reader's `timeStamp.*` codes, every list. */
  timestamp_codes: string[];
  success: string[];
  informational: string[];
  failure: ValidationStatus[];
  /** Where the trust lists came from. */
  anchors: { manifest?: string; tsa?: string };
  error?: string;
}

/** Whether a file's bytes look like a JPEG that carries a C2PA manifest (JUMBF with the `c2pa` label, C2PA 2.1 Appendix A.3). */
export function mayCarryC2pa(bytes: Uint8Array): boolean {
  return bytes[0] === 0xff && bytes[1] === 0xd8 && Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes('jumb') && Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes('c2pa');
}

export async function c2paReport(
  jpeg: Uint8Array,
  anchors: { manifest: readonly string[]; manifestSource?: string; tsa: readonly string[]; tsaSource?: string },
): Promise<C2paReport> {
  const base = {
    reader: C2PA_SDK,
    timestamp_codes: [],
    success: [],
    informational: [],
    failure: [],
    anchors: { ...(anchors.manifestSource ? { manifest: anchors.manifestSource } : {}), ...(anchors.tsaSource ? { tsa: anchors.tsaSource } : {}) },
  };
  let store: ManifestStore;
  try {
    store = await readJpeg(jpeg, readerContext(anchors));
  } catch (error) {
    return { ...base, state: 'unreadable', error: error instanceof Error ? error.message : String(error) };
  }
  const results = store.validation_results?.activeManifest ?? {};
  const success = (results.success ?? []).map((s) => s.code);
  const informational = (results.informational ?? []).map((s) => s.code);
  const failure = results.failure ?? [];
  const all = [...success, ...informational, ...failure.map((f) => f.code)];
  const timestampCodes = all.filter((c) => c.startsWith('timeStamp.'));
  const manifest = store.active_manifest ? store.manifests?.[store.active_manifest] : undefined;
  const info = manifest?.signature_info;
  let ourTsa: boolean | undefined;
  if (anchors.tsa.length > 0 && timestampCodes.length > 0) ourTsa = success.includes('timeStamp.trusted') ? true : all.includes('timeStamp.untrusted') ? false : undefined;
  return {
    ...base,
    state: store.validation_state ?? 'unknown',
    ...(info?.common_name ? { signer: info.common_name } : {}),
    ...(info?.issuer ? { issuer: info.issuer } : {}),
    ...(info?.time ? { time: info.time } : {}),
    ...(ourTsa !== undefined ? { our_tsa: ourTsa } : {}),
    timestamp_codes: timestampCodes,
    success,
    informational,
    failure,
  };
}

/** The report as lines under the file's name. */
export function formatC2pa(report: C2paReport): string[] {
  if (report.state === 'unreadable') return [`  The reader could not read the manifest: ${report.error ?? 'unknown error'}`];
  const lines = [`  state        ${report.state}${STATE_MEANING[report.state] ? ` (${STATE_MEANING[report.state]})` : ''}`];
  if (report.signer) lines.push(`  signer       ${report.signer}${report.issuer ? `, issued by ${report.issuer}` : ''}`);
  lines.push(`  signed at    ${report.time ?? 'no time-stamp the reader accepted'}`);
  const tsa =
    report.our_tsa === true
      ? "our TSA (trusted against the service's TSA root)"
      : report.our_tsa === false
        ? "another TSA (not under the service's TSA root)"
        : report.timestamp_codes.length === 0
          ? 'none'
          : 'unknown: no TSA root of the service is pinned (evidence trust add <url>)';
  lines.push(`  time-stamp   ${tsa}; ${report.timestamp_codes.join(', ') || 'no timeStamp code'}`);
  for (const f of report.failure) lines.push(`  failure      ${f.code}${f.explanation ? `: ${f.explanation}` : ''}`);
  if (!report.anchors.manifest) lines.push('  The signer\'s root is not given (--c2pa-anchors signer-roots.pem), so the reader can say Valid at most, not Trusted.');
  lines.push(`  (${report.reader}; this verdict is the reader's and does not change ours.)`);
  return lines;
}

const STATE_MEANING: Readonly<Record<string, string>> = {
  Trusted: 'well-formed, intact, and signed by a certificate under a trusted root',
  Valid: 'well-formed and intact, but the signer is not under a root the reader was given',
  Invalid: 'the manifest or the photo does not hold',
};
