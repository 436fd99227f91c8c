/**
 * What a crash experiment (crash-harness.ts) is asked to do and what it found: the options, the
 * records of every photo and fault, the report and its table of lines.
 */
import { type ReadProbe, summariseProbes } from './crash-faults.js';

export interface HashRecord {
  device: number;
  index: number;
  imageHash: string;
  body: string;
  /** Where it is sent: an anchor (/api/v2/evidence/anchor) or a hash registration (/api/v2/evidence/hash, device -1). */
  path: string;
  attempts: number;
  firstSentAt: number | undefined;
  /** Kill numbers (1-based) during which an attempt was in flight and got no answer. */
  interruptions: number[];
  settledAt: number | undefined;
  how: '200' | '409-anchored' | undefined;
  /** Time from the ready of the restart after the last interruption to settlement. */
  settleAfterRestartMs: number | undefined;
  /** The last answer that did not settle it (for messages). */
  lastAnswer: string | undefined;
  /** A final answer the client cannot retry (e.g. 409 chain_index_conflict): the device stopped. */
  rejected: string | undefined;
  gaveUp: boolean;
}

export interface Attempt {
  record: HashRecord;
  killedBy: number | undefined;
}

/** The faults the harness injects: the whole service, or one part of it. */
export type FaultKind = 'kill' | 'stop-database' | 'kill-ledger' | 'kill-database';
/** What a crash point did: killed the service at its call, or the request made fewer calls (not reached). */
export interface CrashPointOutcome extends CrashPoint {
  reached: boolean;
  /** The call the hook killed at (from the service log), e.g. "dynamodb UpdateCommand". */
  call?: string;
  /** Not reached: how many calls the request made (the path's length that time). */
  calls?: number;
  imageHash: string;
}

/** One crash point of the sweep: the k-th DynamoDB or ledger call of an anchor request, before it leaves or after its answer. */
export interface CrashPoint {
  killAt: number;
  when: 'before' | 'after';
}

/** A fault at a fixed time after the burst began (continuous runs). */
export interface ScheduledFault {
  kind: FaultKind;
  atMs: number;
  /** stop-database: how long the database stays frozen (SIGSTOP … SIGCONT). */
  durationMs?: number;
}

export interface FaultEvent {
  kind: FaultKind;
  /** 1-based number among the kills (for 'kill'). */
  n: number;
  at: number;
  inFlight: number;
  /** When the service answered health 200 again (kills), or when the fault ended. */
  readyAt: number | undefined;
  /**
   * How long after `readyAt` the last of the photos in flight when the fault began settled (their
   * phones retrying the identical request): recovery should be as short as the outage.
   */
  recoveryMs?: number | undefined;
  note: string;
}

export interface CrashRunOptions {
  devices: number;
  photos: number;
  kills: number;
  seed?: number;
  blockTimeMs?: number;
  /** The contract's limit for settling an interrupted anchor after a restart (60 s). */
  limboLimitMs?: number;
  /** After the final restart, how long past limboLimitMs the client keeps retrying before giving up. */
  graceMs?: number;
  /** Optional faults for the lead to wire (see stopDatabase / killLedger below). */
  stopDatabase?: { times: number; durationMs: number };
  killLedger?: { times: number };
  /**
   * Continuous mode (the SRE's experiment): faults at fixed times after the burst began, instead of
   * at fractions of it; the devices keep anchoring new photos (up to `photos` each) until the last
   * fault is over and `tailMs` has passed. A frozen database is probed with public reads meanwhile.
   */
  schedule?: ScheduledFault[];
  tailMs?: number;
  /**
   * The crash-point sweep: instead of a burst, one photo after the other (device 0), the first
   * attempt of each armed (`x-fault-arm: 1`) on a service started with the fault hook
   * (lib/local/fault-hook.ts) killing itself at call `killAt` of that request, `before` the call
   * leaves or `after` its answer. The next start (with the next point's hook) is the recovery: the
   * phone retries the interrupted photo there, unarmed, until it settles.
   */
  crashPoints?: CrashPoint[];
  /**
   * What the crash points interrupt: `anchor` (default: the armed anchor request), `register` (an
   * armed hash registration), or `feed` (the change feed's applying of the derived data: the photo
   * is anchored unarmed, and the feed's k-th call to DynamoDB kills the service, before it leaves
   * or after its answer, lib/local/fault-hook.ts with EVIDENCE_FAULT_ARM=feed), or `batch` (an
   * armed POST /api/v2/evidence/anchor/batch of `batchSize` consecutive photos of device 0; after
   * the restart the phone sends the identical batch again until every entry settles: crash-batch.ts).
   */
  operation?: 'anchor' | 'register' | 'feed' | 'batch';
  /**
   * Webhooks (issue 37): a receiver on `standardwebhooks` (test/webhooks/support.ts) is subscribed to
   * `evidence.anchored` and `evidence.final` before the run, so that the change feed's outbox writes
   * (lib/webhooks/outbox.ts) are on the path the crash points interrupt. The verdict then asks, of
   * every photo that verifies: its `evidence.anchored` reached the receiver, verified; every fact
   * reached it under one `webhook-id` only; the endpoint holds one delivery per event.
   */
  webhooks?: boolean;
  /** operation 'batch': the photos of device 0 in each armed batch request (default 4). */
  batchSize?: number;
  /** Extra environment for the service (e.g. LEDGER_BATCH_WINDOW_MS). */
  env?: Record<string, string>;
  /** After settling, send a different photo at each interrupted (device, index): it must be refused.
   * 'all': at every settled index (a self-check of the harness on a run without kills). */
  forkProbe?: boolean | 'all';
  log?: (line: string) => void;
  keepDataDir?: boolean;
}

export interface CrashReport {
  seed: number;
  devices: number;
  photos: number;
  dataDir: string;
  logFile: string;
  faults: FaultEvent[];
  hashes: number;
  requestsSent: number;
  interrupted: number;
  settled200: number;
  settled409Anchored: number;
  unsettled: number;
  rejected: number;
  maxSettleAfterRestartMs: number | null;
  p50SettleAfterRestartMs: number | null;
  ledgerAnchorTransactions: number;
  /** Image hashes of this run on the ledger whose evidence does not verify (an unfinished anchor). */
  ledgerWithoutEvidence: string[];
  duplicates: number;
  /** Batch roots on the ledger more than once. */
  rootsTwice: number;
  /** Public reads made while the database was frozen. */
  readProbes: ReadProbe[];
  /** The sweep's points, with whether each was reached. */
  crashPoints: CrashPointOutcome[];
  forks: number;
  forkProbes: { sent: number; refused: number; accepted: number };
  charged: number | null;
  anchorsHeld: number;
  violations: {
    verify200: string[];
    limbo: string[];
    ledgerOnce: string[];
    noFork: string[];
    charging: string[];
    /** Public reads while a part was down: slower than 5 s, or not 503 problem+json (200 from what needs no database is fine). */
    reads: string[];
    /** GET /api/v1/stats totals once converged, against what the run holds. */
    stats: string[];
    /** With `webhooks`: an anchored photo's event not delivered, a fact under two webhook-ids, a delivery made twice, a request that did not verify. */
    webhooks: string[];
  };
  /** With `webhooks`: the requests the receiver got, and the distinct events among them. */
  webhookRequests?: { received: number; events: number };
  durationMs: number;
}

export interface Problem {
  code?: string;
  detail?: string;
  title?: string;
}


/** A different photo sent at an index already used (the fork probe), and the answer. */
export interface ForkProbe {
  device: number;
  index: number;
  imageHash: string;
  status: number;
  answer: string;
}

/** The report as a table of lines (for the bench and for test diagnostics). */
export function formatReport(r: CrashReport): string {
  const rows: [string, string][] = [
    ['seed', String(r.seed)],
    ['devices × photos', `${r.devices} × ${r.photos} (${r.hashes} hashes sent)`],
    ['faults', r.faults.map((f) => `${f.kind}${f.kind === 'kill' ? ` ${f.n}` : ''} (${f.inFlight} in flight${f.recoveryMs !== undefined ? `, all settled ${f.recoveryMs} ms after it ended` : ''})`).join(', ') || 'none'],
    ['requests sent', String(r.requestsSent)],
    ['interrupted', String(r.interrupted)],
    ['settled 200 / 409-anchored', `${r.settled200} / ${r.settled409Anchored}`],
    ['unsettled / refused', `${r.unsettled} / ${r.rejected}`],
    ['settle after restart max / p50', `${r.maxSettleAfterRestartMs ?? '-'} ms / ${r.p50SettleAfterRestartMs ?? '-'} ms`],
    ['ledger anchor transactions', String(r.ledgerAnchorTransactions)],
    ['on ledger without evidence', String(r.ledgerWithoutEvidence.length)],
    ['duplicates (hash on ledger > 1×)', String(r.duplicates)],
    ['Merkle roots on ledger > 1×', String(r.rootsTwice)],
    ['public reads while frozen', r.readProbes.length ? summariseProbes(r.readProbes) : '-'],
    ['forks', String(r.forks)],
    ['fork probes sent / refused / accepted', `${r.forkProbes.sent} / ${r.forkProbes.refused} / ${r.forkProbes.accepted}`],
    ['charged vs anchors held', `${r.charged ?? '?'} vs ${r.anchorsHeld}`],
    ...(r.webhookRequests ? [['webhook requests / distinct events', `${r.webhookRequests.received} / ${r.webhookRequests.events}`] as [string, string]] : []),
    ['duration', `${r.durationMs} ms`],
  ];
  for (const [name, list] of Object.entries(r.violations)) rows.push([`violations: ${name}`, String(list.length)]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
