/**
 * What the reader's trust says about the key that made a proof, as of the time it signed
 * (decisions.md "Key validity windows", "One verdict"): a pinned key used within its validity
 * window, a wallet within its window, and a key a trust file does not hold. verdict.ts composes
 * these into the one verdict; they decide one proof each and fold nothing.
 */
import { checkWindow, retiredSinceNote, type ValidityWindow } from '../crypto/key-windows.js';
import type { ProofResult } from './verdict.js';

const holds = (reason: string): ProofResult => ({ state: 'holds', reason });
const fails = (reason: string): ProofResult => ({ state: 'fails', reason });

/** When a proof was made, and how the reader knows (decisions.md "Key validity windows"). */
export interface SigningTime {
  at: string;
  /** 'rfc3161': a verified token's genTime (trusted); 'stated': the time the signed data states. */
  source: 'rfc3161' | 'stated';
}

/** "as of <time> (RFC 3161 genTime)": how every reader states the signing time. */
export function describeSigningTime(t: SigningTime): string {
  return `as of ${t.at} (${t.source === 'rfc3161' ? 'RFC 3161 genTime' : 'the time the statement states; no independent time'})`;
}

/**
 * A key the reader trusts: its SHA-256 fingerprint alone (valid at any time: a key whose window
 * nobody recorded), or with its validity window (the key registry, the JWK set, the trust file).
 */
export type TrustedKey = string | { sha256: string; window: ValidityWindow };

/**
 * A service as a trust file pinned it (`evidence trust add`, lib/cli/trust.ts): the keys, wallets
 * and certificates it pinned are all those the service had published at `pinned_at`, retired ones
 * included, and none made since.
 */
export interface TrustSnapshot {
  /** The service's base URL: `evidence trust add <service>` refreshes it. */
  service: string;
  /** When it was pinned (ISO 8601). */
  pinned_at: string;
}

/**
 * A key (a wallet, a certificate) that is not among the ones the reader pinned, as of the time it
 * signed. Pinned by a flag, or by the service's own registry (no `snapshots`), the list is
 * complete: the proof fails (`failure`). Pinned from a trust file, the list is each service's as
 * of the time it was pinned: a key that signed after that may be one the service made since (a
 * rotation), so the proof is not established (`unchecked`), and the reason names the refresh;
 * one that signed before every pin was not the service's then, and fails. A proof that does not
 * hold is the only one that fails (decisions.md "One verdict").
 */
export function judgeUnpinned(
  key: { subject: string; among: string; failure: string },
  at: SigningTime | null,
  snapshots: readonly TrustSnapshot[] | undefined,
): ProofResult {
  if (!snapshots || snapshots.length === 0) return fails(key.failure);
  const pins = snapshots.map((s) => `${s.service} on ${s.pinned_at}`).join(', ');
  const signed = at ? Date.parse(at.at) : Number.NaN;
  // Unknown, or after a pin: that service may have made the key since.
  const since = snapshots.filter((s) => !(Date.parse(s.pinned_at) >= signed));
  if (since.length === 0) {
    return fails(`${key.failure}; it signed ${describeSigningTime(at as SigningTime)}, before the trust file pinned ${pins}, which holds every key the service had then`);
  }
  const when = at && Number.isFinite(signed) ? `it signed after that, ${describeSigningTime(at)}` : 'its signing time is not known';
  return {
    state: 'unchecked',
    reason:
      `${key.subject} is not among ${key.among} the trust file pinned (${pins}); ${when}: the service may have made it since (a key rotation). ` +
      `Refresh the trust file: ${since.map((s) => `evidence trust add ${s.service}`).join(', or ')}`,
  };
}

/**
 * A trusted key used within its validity window holds "as of" the signing time; outside it, the
 * key fails (decisions.md "Key validity windows"). Of several entries for one fingerprint (the
 * registry and a pinned list), one whose window holds is enough.
 */
export function judgeKeyWindow(reason: string, fingerprint: string, trusted: readonly TrustedKey[], at: SigningTime): ProofResult {
  const windows = trusted.filter((k) => (typeof k === 'string' ? k : k.sha256).toLowerCase() === fingerprint).map((k) => (typeof k === 'string' ? null : k.window));
  if (windows.includes(null)) return holds(`${reason}; ${describeSigningTime(at)}`);
  const checks = windows.map((w) => checkWindow(w as ValidityWindow, new Date(at.at)));
  const ok = checks.find((c) => c.ok);
  if (ok) return holds(`${reason}; valid ${describeSigningTime(at)}${retiredSinceNote(ok)}`);
  return fails(`the ML-DSA-65 key ${fingerprint.slice(0, 16)}… signed outside its validity window: ${checks[0]?.reason ?? 'no window'} (${at.source === 'rfc3161' ? 'RFC 3161 genTime' : 'stated time'})`);
}

/**
 * The sender's validity window: a ledger proof that holds fails when its sender's window (when
 * the reader knows one) does not contain the record's signing time. Every transaction of a
 * retired wallet belongs to an anchor signed before its retirement (the drain rule of the wallet
 * rotation, docs/runbook.md "Rotating keys"), so the record's signing time is the wallet's too.
 */
export function judgeWalletWindow(proof: ProofResult, from: string | null, windows: readonly { address: string; window: ValidityWindow }[], at: SigningTime): ProofResult {
  if (proof.state !== 'holds' || from === null) return proof;
  const mine = windows.filter((w) => w.address.toLowerCase() === from.toLowerCase());
  if (mine.length === 0) return proof;
  const checks = mine.map((w) => checkWindow(w.window, new Date(at.at)));
  const ok = checks.find((c) => c.ok);
  if (ok) return ok.retiredSince ? holds(`${proof.reason}; the wallet was valid ${describeSigningTime(at)}${retiredSinceNote(ok)}`) : proof;
  return fails(`the transaction's sender ${from} was outside its validity window: ${checks[0]?.reason ?? ''}`);
}
