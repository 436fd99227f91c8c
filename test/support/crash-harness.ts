/**
 * Crash harness: runs `npm start` (lib/local/start.ts) as a user would, in its own process group,
 * drives a burst of chained anchors from N devices with a phone app's retry rule, SIGKILLs the
 * whole process tree at random moments (seeded), restarts it on the same DATA_DIR, and then checks
 * the promises of decisions.md "Faults and retries" through public interfaces and independent reads
 * (the API, the local chain's JSON-RPC):
 *   1. every 200 verifies and has a receipt;
 *   2. no limbo: every interrupted hash settles within 60 s of the restart that follows;
 *   3. at most one ledger transaction per image hash, and each receipt names one of them;
 *   4. no fork: one verified hash per (device, index), the one the device sent; chain intact;
 *   5. exact charging: `used` equals the anchors the account holds.
 *
 * Nothing here imports the service's anchoring code: the device side is node:crypto, the ledger
 * read is ethers over JSON-RPC, the transaction data is decoded here (image_hash || server_hash).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BATCH_PATH, type BatchPhone, nextBatch, type PendingBatch, sendBatchUntilSettled, takeAnswer } from './crash-batch.js';
import { ANCHOR_PATH, DeviceChain, REGISTER_PATH, registrationBody } from './crash-client.js';
import { type ReadProbe, READ_DEADLINE_MS, killDatabase, killLedger, probeReadsWhile, readLogLength, stopDatabase, summariseProbes } from './crash-faults.js';
import { judgeRun } from './crash-judge.js';
import { fetchRetry, parseProblem, readStats, setUpAccount, verifyHash } from './crash-reads.js';
import type { Attempt, CrashPoint, CrashPointOutcome, CrashReport, CrashRunOptions, FaultEvent, ForkProbe, HashRecord } from './crash-report.js';
import { Service, groupProcesses } from './crash-service.js';
import { subscribeReceiver, type WebhookWatch } from './crash-webhooks.js';
import { waitFor } from './wait.js';

// The harness is split by concern: the service as a process group (crash-service.ts), the phones
// (crash-client.ts), the faults of one part (crash-faults.ts), the reads back (crash-reads.ts), the
// verdict (crash-judge.ts), the options and the report (crash-report.ts). What the tests and the
// benchmarks use is exported here.
export { formatReport, type CrashPoint, type CrashReport, type CrashRunOptions, type FaultKind, type ScheduledFault } from './crash-report.js';
export { Service, killStartedServices } from './crash-service.js';
export { setUpAccount } from './crash-reads.js';
export { DeviceChain } from './crash-client.js';


/** mulberry32: a small seeded PRNG, so that a failing kill schedule can be replayed (CRASH_SEED). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}


/**
 * Runs one crash experiment end to end and returns what it found. It throws only when the
 * harness itself cannot work (the service does not start); broken promises are in `violations`.
 */
export async function runCrashExperiment(options: CrashRunOptions): Promise<CrashReport> {
  const t0 = Date.now();
  const seed = options.seed ?? (Number(process.env.CRASH_SEED) || (randomBytes(4).readUInt32LE(0) >>> 0));
  const log = options.log ?? (() => undefined);
  const random = prng(seed);
  const limboLimitMs = options.limboLimitMs ?? 60_000;
  const graceMs = options.graceMs ?? 3_000;
  log(`crash harness: seed ${seed} (CRASH_SEED=${seed} replays the kill schedule), ${options.devices} devices × ${options.photos} photos, ${options.kills} kills`);

  const work = await mkdtemp(path.join(os.tmpdir(), 'evidence-crash-'));
  const dataDir = path.join(work, 'data');
  const logFile = path.join(work, 'service.log');
  const service = await Service.create({ dataDir, logFile, blockTimeMs: options.blockTimeMs ?? 0, ...(options.env ? { env: options.env } : {}) });
  const killOnExit = () => {
    if (service.pid) {
      try {
        process.kill(-service.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  };
  process.once('exit', killOnExit);
  let webhooks: WebhookWatch | undefined;

  try {
    await service.start();
    log(`service ready on ${service.base} (rpc ${service.rpcUrl}, data ${dataDir})`);
    const account = await setUpAccount(service);
    if (options.webhooks) webhooks = await subscribeReceiver(service, account);
    const baselineStats = await readStats(service);

    // ── the burst ──
    const devices = Array.from({ length: options.devices }, (_, i) => new DeviceChain(i));
    const records: HashRecord[] = [];
    const inFlight = new Set<Attempt>();
    const faults: FaultEvent[] = [];
    const readProbes: ReadProbe[] = [];
    /** The photos in flight when each fault began (their settling after the fault ended is the recovery). */
    const inFlightAt = new Map<FaultEvent, HashRecord[]>();
    let requestsSent = 0;
    let lastReadyAt = Date.now();
    let faultsDone = false;
    const totalHashes = options.devices * options.photos;
    const readyAfterKill = (n: number): number | undefined => faults.find((f) => f.kind === 'kill' && f.n === n)?.readyAt;

    // The client gives up on a hash only once every fault is over, and only after the contract's
    // limit has passed since the last restart or since the hash was first sent, whichever is later
    // (a slow machine must not turn an ordinary late photo into a "limbo").
    const giveUpAt = (record: HashRecord) =>
      faultsDone ? Math.max(lastReadyAt, record.firstSentAt ?? Date.now()) + limboLimitMs + graceMs : Number.POSITIVE_INFINITY;

    /**
     * Retries the record until it settles. `whenDead` (the crash-point sweep of the change feed):
     * called when an attempt failed because the service exited, which in that mode only the armed
     * feed does (it may apply this very anchor's write before the answer leaves); it restarts the
     * service, as nothing else would.
     */
    const sendUntilSettled = async (record: HashRecord, whenDead?: () => Promise<void>): Promise<void> => {
      let backoff = 250;
      const pause = async () => {
        await sleep(backoff * (0.75 + random() * 0.5));
        backoff = Math.min(backoff * 2, 2000);
      };
      for (;;) {
        if (Date.now() > giveUpAt(record)) {
          record.gaveUp = true;
          return;
        }
        const attempt: Attempt = { record, killedBy: undefined };
        record.attempts += 1;
        record.firstSentAt ??= Date.now();
        requestsSent += 1;
        inFlight.add(attempt);
        let status: number;
        let text: string;
        try {
          const res = await fetch(`${service.base}${record.path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
            body: record.body,
            signal: AbortSignal.timeout(30_000),
          });
          status = res.status;
          text = await res.text();
        } catch (error) {
          if (attempt.killedBy !== undefined) record.interruptions.push(attempt.killedBy);
          record.lastAnswer = `network error: ${(error as Error).message}`;
          if (whenDead && (await waitFor('the service to exit', 2_000, () => (service.exitedBy !== undefined ? true : undefined), 20).catch(() => false))) {
            await whenDead();
            continue;
          }
          await pause();
          continue;
        } finally {
          inFlight.delete(attempt);
        }
        if (status === 200) {
          settle(record, '200');
          return;
        }
        const problem = parseProblem(text);
        record.lastAnswer = `${status} ${problem.code ?? ''}: ${problem.detail ?? text.slice(0, 200)}`;
        if (status === 409 && problem.code === 'hash_already_anchored') {
          if (/being anchored/i.test(problem.detail ?? '')) {
            await pause();
            continue;
          }
          // "is anchored": settled when the public verify agrees.
          const verified = await verifyHash(service, record.imageHash).catch(() => undefined);
          if (verified?.verified) {
            settle(record, '409-anchored');
            return;
          }
          record.lastAnswer += ` (verify: ${verified ? `${verified.status} verified:${String(verified.verified)}` : 'unreachable'})`;
          await pause();
          continue;
        }
        if (status >= 500 || status === 429) {
          await pause();
          continue;
        }
        record.rejected = record.lastAnswer;
        return;
      }
    };

    const settle = (record: HashRecord, how: '200' | '409-anchored') => {
      record.settledAt = Date.now();
      record.how = how;
    };

    const burstStart = Date.now();
    const schedule = options.schedule ? [...options.schedule].sort((a, b) => a.atMs - b.atMs) : undefined;
    // Continuous mode: new photos until the last fault is over and the tail has passed.
    let stopAt = Number.POSITIVE_INFINITY;
    const runDevice = async (device: DeviceChain) => {
      for (let i = 0; i < options.photos && Date.now() < stopAt; i++) {
        const next = device.nextBody();
        const record: HashRecord = {
          device: device.id,
          index: next.index,
          imageHash: next.imageHash,
          body: next.body,
          path: ANCHOR_PATH,
          attempts: 0,
          firstSentAt: undefined,
          interruptions: [],
          settledAt: undefined,
          how: undefined,
          settleAfterRestartMs: undefined,
          lastAnswer: undefined,
          rejected: undefined,
          gaveUp: false,
        };
        records.push(record);
        await sendUntilSettled(record);
        if (!record.settledAt) return; // a phone cannot link the next photo to an unsettled one
      }
    };

    // ── the fault schedule: kills at random fractions of the burst (or at fixed times), plus the optional faults ──
    type Planned = { kind: FaultEvent['kind']; threshold: number; atMs?: number; durationMs?: number };
    const planned: Planned[] = [];
    if (schedule) {
      for (const f of schedule) planned.push({ kind: f.kind, threshold: 0, atMs: f.atMs, ...(f.durationMs !== undefined ? { durationMs: f.durationMs } : {}) });
    } else {
      for (let k = 0; k < options.kills; k++) planned.push({ kind: 'kill', threshold: 0.1 + random() * 0.75 });
      for (let k = 0; k < (options.stopDatabase?.times ?? 0); k++) planned.push({ kind: 'stop-database', threshold: 0.1 + random() * 0.75 });
      for (let k = 0; k < (options.killLedger?.times ?? 0); k++) planned.push({ kind: 'kill-ledger', threshold: 0.1 + random() * 0.6 });
      planned.sort((a, b) => a.threshold - b.threshold);
    }
    const firstSent = () => records.filter((r) => r.firstSentAt !== undefined).length;
    const devicesDone = { value: false };
    const anchoredSoFar = () => records.filter((r) => r.how === '200').map((r) => r.imageHash);

    /** Waits until health answers 200 again (a supervised part restarted, a frozen one thawed). */
    const healthyAgain = async (partWasKilled = false): Promise<number> => {
      // A killed part: first its restart is noticed (health says down), so that "again" is not the answer from before.
      if (partWasKilled) {
        await waitFor('health to notice the fault', 3_000, async () => !(await service.healthy()) || undefined, 20).catch(() => undefined);
      }
      await waitFor('health 200 after the fault', 5 * 60_000, async () => (await service.healthy()) || undefined, 100);
      return Date.now();
    };

    /** The sweep's driver (see CrashRunOptions.crashPoints). */
    /** A request armed for the fault hook (`x-fault-arm: 1`): its k-th call kills the service. */
    const armedPost = (requestPath: string, body: string) =>
      fetch(`${service.base}${requestPath}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey, 'x-fault-arm': '1' },
        body,
        signal: AbortSignal.timeout(60_000),
      });
    const batchPhone: BatchPhone = {
      base: () => service.base, apiKey: account.apiKey, random, giveUpAt, settle: (r, how) => settle(r, how),
      sent: () => void (requestsSent += 1), verified: async (h) => (await verifyHash(service, h).catch(() => undefined))?.verified === true,
    };

    const runCrashPoints = async (points: CrashPoint[], device: DeviceChain) => {
      // Each photo's limit runs from the start that recovers it (giveUpAt).
      faultsDone = true;
      let pending: HashRecord | undefined;
      let pendingBatch: PendingBatch | undefined;
      for (const [i, point] of points.entries()) {
        // The start with this point's hook is the recovery of the previous point's photo.
        await service.kill();
        const startedLog = readLogLength(options, service);
        try {
          await service.start({ EVIDENCE_FAULT_KILL_AT: String(point.killAt), EVIDENCE_FAULT_KILL_WHEN: point.when, ...(options.operation === 'feed' ? { EVIDENCE_FAULT_ARM: 'feed' } : {}) });
        } catch (error) {
          // The change feed's first batch after a start is the one the previous kill left untrimmed:
          // the point may kill its applying again while the service starts. A crash point like any
          // other (the next start recovers it); any other failure to start is the harness's.
          const call = /fault-hook: SIGKILL at call \d+ \(([^)]*)\)/.exec(service.logSince(startedLog))?.[1];
          if (options.operation !== 'feed' || !call) throw error;
          pointOutcomes.push({ ...point, reached: true, call: `${call}, applying the previous kill's changes during the start`, imageHash: '' });
          const n = faults.filter((f) => f.kind === 'kill').length + 1;
          faults.push({ kind: 'kill', n, at: Date.now(), inFlight: 0, readyAt: undefined, note: `crash point ${i + 1}/${points.length}: call ${point.killAt} ${point.when} (${call}) during the start` });
          continue;
        }
        const ready = Date.now();
        const previous = faults.at(-1);
        if (previous && previous.readyAt === undefined) previous.readyAt = ready;
        lastReadyAt = ready;
        if (pending) await sendUntilSettled(pending);
        if (pendingBatch) await sendBatchUntilSettled(batchPhone, pendingBatch);
        const operation = options.operation ?? 'anchor';
        // operation 'batch': the point interrupts one batch request of consecutive photos (crash-batch.ts).
        const batch = operation === 'batch' ? nextBatch(device, options.batchSize ?? 4) : undefined;
        const next = batch?.records[0] ?? (operation === 'register' ? registrationBody() : device.nextBody());
        const record: HashRecord = batch?.records[0] ?? {
          device: operation === 'register' ? -1 : device.id, index: next.index, imageHash: next.imageHash, body: next.body,
          path: operation === 'register' ? REGISTER_PATH : ANCHOR_PATH, attempts: 1, firstSentAt: Date.now(),
          interruptions: [], settledAt: undefined, how: undefined, settleAfterRestartMs: undefined, lastAnswer: undefined, rejected: undefined, gaveUp: false,
        };
        records.push(...(batch?.records ?? [record]));
        requestsSent += 1;
        const logBefore = readLogLength(options, service);
        const outcome: CrashPointOutcome = { ...point, reached: false, imageHash: next.imageHash };
        pointOutcomes.push(outcome);
        const killed = (note: string) => {
          outcome.reached = true;
          outcome.call = /fault-hook: SIGKILL at call \d+ \(([^)]*)\)/.exec(service.logSince(logBefore))?.[1];
          const n = faults.filter((f) => f.kind === 'kill').length + 1;
          faults.push({ kind: 'kill', n, at: Date.now(), inFlight: operation === 'feed' ? 0 : (batch?.records.length ?? 1), readyAt: undefined, note: `crash point ${i + 1}/${points.length}: call ${point.killAt} ${point.when}${outcome.call ? ` (${outcome.call})` : ''}${note}` });
          return n;
        };
        if (operation === 'feed') {
          // The photo is anchored unarmed; the feed applies its changes within a second or so,
          // armed: the k-th of its calls since this start kills the service, or none does. The feed
          // may apply the anchor's own write, and be killed, before the anchor's answer leaves: the
          // point is reached, and a start without the hook recovers both.
          let diedDuringSend = false;
          await sendUntilSettled(record, async () => {
            if (!diedDuringSend) record.interruptions.push(killed(': the change feed, before the anchor answered'));
            diedDuringSend = true;
            await service.kill();
            await service.start();
            const last = faults.at(-1);
            if (last && last.readyAt === undefined) last.readyAt = Date.now();
            lastReadyAt = Date.now();
          });
          if (diedDuringSend) {
            pending = undefined;
            continue;
          }
          const feedCalls = () => [...service.logSince(logBefore).matchAll(/fault-hook: change feed made (\d+) calls/g)].reduce((n, m) => n + Number(m[1]), 0);
          await waitFor('the change feed to apply the photo, or the hook to kill the service', 20_000, () =>
            service.exitedBy !== undefined || /fault-hook: change feed made [1-9]/.test(service.logSince(logBefore)) ? true : undefined,
          ).catch(() => undefined);
          if (service.exitedBy !== undefined) killed(': the change feed');
          else outcome.calls = feedCalls();
          pending = undefined;
          continue;
        }
        pendingBatch = undefined;
        try {
          const res = await armedPost(batch ? BATCH_PATH : record.path, batch ? batch.body : record.body);
          const text = await res.text();
          outcome.calls = Number(res.headers.get('x-fault-calls') ?? 'NaN');
          // Not killed: this request made fewer calls than the point (a path shorter this time).
          if (batch) {
            if (res.status === 200) await takeAnswer(batchPhone, batch, text);
            pendingBatch = batch;
            pending = undefined;
          } else if (res.status === 200) {
            record.settledAt = Date.now();
            record.how = '200';
          } else record.lastAnswer = `${res.status} ${text.slice(0, 200)}`;
          if (!batch) pending = record.settledAt ? undefined : record;
        } catch (error) {
          const n = killed(batch ? ` in a batch of ${batch.records.length}` : '');
          for (const r of batch?.records ?? [record]) {
            r.interruptions.push(n);
            r.lastAnswer = `killed at call ${point.killAt} ${point.when}: ${(error as Error).message}`;
          }
          pending = batch ? undefined : record;
          pendingBatch = batch;
        }
      }
      // The last point's recovery: a start without the hook.
      await service.kill();
      await service.start();
      lastReadyAt = Date.now();
      const last = faults.at(-1);
      if (last && last.readyAt === undefined) last.readyAt = lastReadyAt;
      if (pending) await sendUntilSettled(pending);
      if (pendingBatch) await sendBatchUntilSettled(batchPhone, pendingBatch);
    };

    const chaos = async () => {
      let killNumber = 0;
      for (const fault of planned) {
        if (fault.atMs !== undefined) {
          const wait = burstStart + fault.atMs - Date.now();
          if (wait > 0) await sleep(wait);
          if (devicesDone.value) break;
        } else {
          const target = Math.ceil(fault.threshold * totalHashes);
          // The moment: the burst has reached the planned fraction, or (when every device is stuck)
          // 4 s have passed since the last restart. Then a random 0–300 ms into the requests' work.
          await waitFor('the burst to reach the next fault', 10 * 60_000, () =>
            devicesDone.value || firstSent() >= target || Date.now() - lastReadyAt > 4_000 ? true : undefined,
          );
          if (devicesDone.value) break;
          await sleep(random() * 300);
        }
        await waitFor('a request in flight', 5_000, () => (inFlight.size > 0 ? true : undefined), 5).catch(() => undefined);
        const event: FaultEvent = { kind: fault.kind, n: 0, at: Date.now(), inFlight: inFlight.size, readyAt: undefined, note: '' };
        inFlightAt.set(event, [...inFlight].map((a) => a.record));
        faults.push(event);
        if (fault.kind === 'kill') {
          killNumber += 1;
          event.n = killNumber;
          for (const attempt of inFlight) attempt.killedBy = killNumber;
          const pids = service.pid ? groupProcesses(service.pid).map((p) => p.pid) : [];
          await service.kill();
          const downAt = Date.now();
          await service.start();
          event.readyAt = Date.now();
          event.note = `killed ${pids.length} processes with ${event.inFlight} requests in flight; down ${downAt - event.at} ms, restarted in ${event.readyAt - downAt} ms`;
        } else if (fault.kind === 'stop-database') {
          const durationMs = fault.durationMs ?? options.stopDatabase?.durationMs ?? 6000;
          const probing = probeReadsWhile(service, anchoredSoFar(), durationMs);
          event.note = await stopDatabase(service, durationMs);
          const probe = await probing;
          readProbes.push(...probe);
          event.readyAt = await healthyAgain();
          const slow = probe.filter((p) => p.ms > READ_DEADLINE_MS || (p.status !== 503 && p.status !== 200));
          event.note += `; ${probe.length} public reads while frozen: ${summariseProbes(probe)}${slow.length ? ` (${slow.length} too slow or not 503)` : ''}; healthy ${event.readyAt - event.at - durationMs} ms after SIGCONT`;
        } else if (fault.kind === 'kill-database') {
          event.note = killDatabase(service);
          event.readyAt = await healthyAgain(true);
          event.note += `; healthy again after ${event.readyAt - event.at} ms`;
        } else {
          event.note = killLedger(service);
          event.readyAt = await healthyAgain(true);
          event.note += `; healthy again after ${event.readyAt - event.at} ms`;
        }
        lastReadyAt = event.readyAt;
        log(`fault ${faults.length}/${planned.length}: ${fault.kind} at ${event.at - t0} ms — ${event.note}`);
      }
      if (schedule) stopAt = Date.now() + (options.tailMs ?? 5_000);
      faultsDone = true;
    };

    const pointOutcomes: CrashPointOutcome[] = [];
    if (options.crashPoints) {
      await runCrashPoints(options.crashPoints, devices[0] as DeviceChain);
    } else {
      const chaosDone = chaos();
      await Promise.all(devices.map((d) => runDevice(d)));
      devicesDone.value = true;
      await chaosDone;
    }
    faultsDone = true;
    log(`burst done at ${Date.now() - t0} ms: ${records.length} hashes, ${requestsSent} requests`);

    // ── the fork probe: a different photo at each interrupted (device, index) must be refused ──
    const probes: ForkProbe[] = [];
    if (options.forkProbe ?? true) {
      // Only where the interrupted photo settled: an unsettled one is already a limbo violation,
      // and its index may rightly be free (undone) — a probe there would prove nothing.
      const targets = records.filter((r) => r.path === ANCHOR_PATH && (options.forkProbe === 'all' || r.interruptions.length > 0) && r.settledAt !== undefined);
      for (const r of targets) {
        const device = devices[r.device] as DeviceChain;
        const probe = device.conflictingBody(r.index);
        const res = await fetchRetry(`${service.base}/api/v2/evidence/anchor`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
          body: probe.body,
        });
        probes.push({ device: r.device, index: r.index, imageHash: probe.imageHash, status: res.status, answer: res.text.slice(0, 200) });
      }
    }

    // ── the reads and the verdict (crash-judge.ts) ──
    return await judgeRun({ options, seed, t0, log, limboLimitMs, service, dataDir, logFile, account, webhooks, baselineStats, devices, records, probes, faults, readProbes, inFlightAt, pointOutcomes, requestsSent, lastReadyAt, readyAfterKill });
  } finally {
    process.off('exit', killOnExit);
    await webhooks?.receiver.stop();
    await service.kill().catch(() => undefined);
    if (!options.keepDataDir && !process.env.CRASH_KEEP) await rm(work, { recursive: true, force: true }).catch(() => undefined);
    else log(`kept ${work}`);
  }
}
