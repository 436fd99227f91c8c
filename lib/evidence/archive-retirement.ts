/**
 * Renewal on a TSA key's retirement, docs/decisions.md "Evidence records" (RFC 4998 §5.2: renew
 * before the key or certificate of the last archive timestamp approaches the end of its validity;
 * a rotation ends the key's validity at its retirement, and a retirement for compromise needs a
 * fresh key at once).
 *
 * The retired certificates are the TSA history's classic leaves (lib/crypto/tsa/history.ts; the
 * archive's timestamps are the classic TSA's). A record under one of them is due now, whatever
 * its renew_at, as long as the TSA signs with another certificate, not retired already
 * ({@link signsFreshly}).
 *
 * Finding those records reads no more than they are: a record's renew_at is its last token's
 * certificate's notAfter less the margin (or, inside the margin, a retry within a day), so every
 * record under a retired certificate is on the renewal_due index at or before
 * max(notAfter − margin, now + a day). The job reads that stretch of the index once, one page per
 * pass from where the previous page ended (TSA_RETIREMENT_SWEEP, kept in the archive table), reads
 * each group or own record of the page, and renews those whose last token a retired certificate
 * signed (archive.ts decides, from the token itself); the page is recorded only after its
 * renewals are stored. Once the stretch is looked through the sweep is `swept` and never read
 * again in this process. What else the stretch holds is read once and left alone: records under
 * an older certificate (renewed in the same pass when it is retired too) and, when the current
 * certificate ends no later than the retired one (leaves cut at their root's notAfter), the current
 * certificate's records written before the sweep got there.
 */
import { log } from '../log.js';
import { ProcessCache } from '../memo.js';
import type { ArchiveStore, RenewalDue, RetirementSweep } from './archive-store.js';

/** A retired TSA certificate, as the TSA history lists it (a retirement may be planned: retiredAt in the future). */
export interface RetiredTsaCertificate {
  /** SHA-256 of the certificate's DER, hex (lower case). */
  sha256: string;
  notAfter: Date;
  /** When it stopped signing, or is to stop (the history's retired_at). */
  retiredAt: Date;
}

/** The certificate the TSA signs with now. */
export interface CurrentTsaCertificate {
  sha256: string;
  notAfter: Date;
}

/** A page of a retired certificate's sweep: its records to look at, and how to record it once they are renewed. */
export interface RetirementPage {
  certificate: RetiredTsaCertificate;
  /** The groups and own records of the page (digest offers are the renewal pass's own business). */
  candidates: RenewalDue[];
  /** Whether this page ends the sweep. */
  last: boolean;
  /** Records the page (advance, or finish): only once its renewals are stored. */
  commit(): Promise<void>;
}

/**
 * Whether a renewal under the TSA's current certificate moves records off a retired one: the
 * history does not list it, or lists it for a retirement still to come (until then its tokens
 * hold; its own records move once the next key signs).
 */
export function signsFreshly(retired: readonly RetiredTsaCertificate[], current: CurrentTsaCertificate, now: Date): boolean {
  const listed = retired.find((r) => r.sha256 === current.sha256);
  return !listed || listed.retiredAt.getTime() > now.getTime();
}

/** The sweeps seen `swept` (final: a hit is what a read would answer). */
const swept = new ProcessCache<string, true>('TSA retirement sweeps swept', 256);

/**
 * The next page to look through: of the retired certificate whose records reach furthest on the
 * index, among those not swept (one strongly consistent read each, until one is found; a swept
 * one is not read again in this process) and other than the current one. None when every
 * retirement is swept, or when the TSA signs with a certificate retired already (a renewal would
 * need a fresh key: the log says so).
 */
export async function nextRetirementPage(options: {
  store: ArchiveStore;
  retired: readonly RetiredTsaCertificate[];
  current: () => Promise<CurrentTsaCertificate>;
  /** The renewal margin (ARCHIVE_RENEW_BEFORE_DAYS) and the retry of a chain inside it. */
  renewBeforeMs: number;
  retryMs: number;
  now: Date;
  limit: number;
}): Promise<RetirementPage | undefined> {
  const open = options.retired.filter((r) => swept.get(r.sha256) === undefined);
  if (open.length === 0) return undefined;
  const current = await options.current();
  if (!signsFreshly(options.retired, current, options.now)) {
    log.warn('archive: the TSA signs with a certificate the TSA history lists as retired; the records under retired certificates are renewed once the TSA key is rotated', {
      certificate: current.sha256,
    });
    return undefined;
  }
  // The current certificate's own planned retirement waits for the next key: its records are under it.
  const sweepable = open.filter((r) => r.sha256 !== current.sha256);
  const until = (r: RetiredTsaCertificate) => new Date(Math.max(r.notAfter.getTime() - options.renewBeforeMs, options.now.getTime() + options.retryMs)).toISOString();
  for (const certificate of sweepable.sort((a, b) => until(b).localeCompare(until(a)))) {
    const read = await options.store.getRetirementSweep(certificate.sha256);
    if (read?.state === 'swept') {
      swept.set(certificate.sha256, true);
      continue;
    }
    return page(options.store, certificate, read, until(certificate), options.limit);
  }
  return undefined;
}

async function page(store: ArchiveStore, certificate: RetiredTsaCertificate, read: RetirementSweep | undefined, until: string, limit: number): Promise<RetirementPage> {
  const listed = await store.listRenewalsUpTo(until, limit, read?.cursor);
  return {
    certificate,
    candidates: listed.due.filter((d) => d.kind !== 'digest'),
    last: listed.next === undefined,
    commit: async () => {
      // From the sweep as read: a pass that got there first keeps its move (this page is looked at again, harmlessly).
      const moved = await store.moveRetirementSweep(certificate.sha256, read, listed.next === undefined ? { state: 'swept' } : { state: 'sweeping', cursor: listed.next });
      if (moved && listed.next === undefined) swept.set(certificate.sha256, true);
    },
  };
}
