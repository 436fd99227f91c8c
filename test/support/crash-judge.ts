/**
 * The verdict of a crash experiment (crash-harness.ts): once the burst and its faults are over,
 * reads every photo back and checks the promises the harness's header lists (every 200 verifies,
 * no limbo, at most one ledger transaction per hash, no fork, exact charging, exact statistics),
 * then writes the report.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ANCHOR_PATH, REGISTER_PATH, type DeviceChain } from './crash-client.js';
import { type ReadProbe, READ_DEADLINE_MS } from './crash-faults.js';
import { type LedgerRead, type Receipt, type StatTotals, type VerifyResult, fetchRetry, pool, readChain, readLedger, readSeals, readStats, readUsed, verifyHash } from './crash-reads.js';
import type { CrashPointOutcome, CrashReport, CrashRunOptions, FaultEvent, ForkProbe, HashRecord } from './crash-report.js';
import type { Service } from './crash-service.js';
import { judgeWebhooks, type WebhookWatch } from './crash-webhooks.js';
import { waitFor } from './wait.js';

/** What the run observed, handed to the verdict. */
export interface RunObservations {
  options: CrashRunOptions;
  seed: number;
  t0: number;
  log: (line: string) => void;
  limboLimitMs: number;
  service: Service;
  dataDir: string;
  logFile: string;
  account: { apiKey: string; email: string; password: string; token: string };
  /** With CrashRunOptions.webhooks: the subscribed receiver. */
  webhooks: WebhookWatch | undefined;
  baselineStats: StatTotals;
  devices: DeviceChain[];
  records: HashRecord[];
  probes: ForkProbe[];
  faults: FaultEvent[];
  readProbes: ReadProbe[];
  inFlightAt: Map<FaultEvent, HashRecord[]>;
  pointOutcomes: CrashPointOutcome[];
  requestsSent: number;
  /** When the service last answered health 200 after a fault. */
  lastReadyAt: number;
  readyAfterKill: (n: number) => number | undefined;
}

/** Reads the run back and judges it; broken promises are in the report's `violations`. */
export async function judgeRun(run: RunObservations): Promise<CrashReport> {
  const { options, seed, t0, log, limboLimitMs, service, dataDir, logFile, account, webhooks, baselineStats, devices, records, probes, faults, readProbes, inFlightAt, pointOutcomes, requestsSent, lastReadyAt, readyAfterKill } = run;
  // ── the reads ──
  // The contract's limit after the last restart, and at least a few seconds from now.
  const readDeadline = Math.max(lastReadyAt + limboLimitMs, Date.now() + 5_000);
  const allHashes = [...records.map((r) => r.imageHash), ...probes.map((p) => p.imageHash)];
  const verified = new Map<string, VerifyResult>();
  const receipts = new Map<string, Receipt>();
  const readHash = async (h: string, mustVerify: boolean) => {
    for (;;) {
      const v = await verifyHash(service, h).catch(() => undefined);
      if (v) verified.set(h, v);
      if (v?.verified) break;
      if (!mustVerify || Date.now() > readDeadline) break;
      await sleep(250);
    }
    if (verified.get(h)?.verified) {
      const res = await fetchRetry(`${service.base}/api/v2/evidence/receipt/${h}`);
      if (res.status === 200) receipts.set(h, JSON.parse(res.text) as Receipt);
    }
  };
  const mustVerify = new Set(records.filter((r) => r.path === ANCHOR_PATH && r.settledAt !== undefined).map((r) => r.imageHash));
  await pool(allHashes, 8, (h) => readHash(h, mustVerify.has(h)));

  const violations: CrashReport['violations'] = { verify200: [], limbo: [], ledgerOnce: [], noFork: [], charging: [], reads: [], stats: [], webhooks: [] };
  for (const p of readProbes) {
    if (p.status === 0) violations.reads.push(`GET ${p.path} did not answer within ${READ_DEADLINE_MS * 2} ms while the database was frozen`);
    else if (p.ms > READ_DEADLINE_MS) violations.reads.push(`GET ${p.path} answered ${p.status} after ${p.ms} ms while the database was frozen (limit ${READ_DEADLINE_MS} ms)`);
    else if (p.status === 503 && !p.contentType.startsWith('application/problem+json') && !p.contentType.startsWith('text/html')) violations.reads.push(`GET ${p.path} answered 503 as ${p.contentType}, not problem+json`);
    else if (p.status !== 503 && p.status !== 200) violations.reads.push(`GET ${p.path} answered ${p.status} while the database was frozen (503 expected)`);
  }

  // 1. every 200 verifies and has a receipt; every registration answered 200 is registered
  const registrations = records.filter((r) => r.path === REGISTER_PATH);
  for (const r of registrations.filter((x) => x.how === '200')) {
    const v = verified.get(r.imageHash);
    if (v?.status !== 200 || !v.registered_at) violations.verify200.push(`${r.imageHash} (a registration) got 200 but verify says ${v ? `${v.status} registered_at ${String(v.registered_at)}` : 'nothing'}`);
  }
  for (const r of records.filter((x) => x.how === '200' && x.path === ANCHOR_PATH)) {
    const v = verified.get(r.imageHash);
    if (!v?.verified) violations.verify200.push(`${r.imageHash} (device ${r.device} index ${r.index}) got 200 but verify says ${v ? `${v.status} verified:${String(v.verified)}` : 'nothing'}`);
    else if (!receipts.has(r.imageHash)) violations.verify200.push(`${r.imageHash} (device ${r.device} index ${r.index}) verifies but has no receipt`);
  }

  // 2. no limbo
  const killEvents = faults.filter((f) => f.kind === 'kill');
  for (const r of records) {
    const where = `${r.imageHash} (device ${r.device} index ${r.index})`;
    if (r.rejected) {
      violations.limbo.push(`${where} was refused on retry: ${r.rejected}`);
      continue;
    }
    if (r.settledAt === undefined) {
      violations.limbo.push(
        `${where} never settled${r.interruptions.length ? ` after kill ${r.interruptions.join(', ')}` : ''}: last answer ${r.lastAnswer ?? 'none'} (${r.attempts} attempts)`,
      );
      continue;
    }
    // Each interruption must have settled, or been overtaken by the next kill, within the limit.
    for (const k of r.interruptions) {
      const ready = readyAfterKill(k);
      if (ready === undefined) continue;
      const nextKill = killEvents.find((f) => f.n > k && f.at >= ready);
      const end = nextKill && nextKill.at < r.settledAt ? nextKill.at : r.settledAt;
      if (end - ready > limboLimitMs) {
        violations.limbo.push(`${where} interrupted by kill ${k} settled ${end - ready} ms after the restart (limit ${limboLimitMs} ms)`);
      }
    }
  }

  // 3. at most one ledger transaction per image hash (directly or in a batch); receipts name one of them
  const seals = await readSeals(`http://127.0.0.1:${service.ports.dynamo}`).catch((error: unknown) => {
    violations.ledgerOnce.push(`the sealed batches could not be read: ${(error as Error).message}`);
    return new Map<string, string[]>();
  });
  const ledger = await readLedger(service.rpcUrl, seals).catch((error: unknown): LedgerRead => {
    violations.ledgerOnce.push(`the chain could not be read over JSON-RPC at ${service.rpcUrl}: ${(error as Error).message}`);
    return { txs: new Map(), batchTxs: new Map(), byImageHash: new Map(), byRoot: new Map(), anchorTxCount: 0 };
  });
  const ourHashes = new Set(allHashes);
  let duplicates = 0;
  let rootsTwice = 0;
  for (const [root, txs] of ledger.byRoot) {
    if (txs.length > 1) {
      rootsTwice += 1;
      violations.ledgerOnce.push(`Merkle root ${root} is on the ledger ${txs.length} times: ${txs.join(', ')}`);
    }
    if (!seals.has(root)) violations.ledgerOnce.push(`Merkle root ${root} (${txs.join(', ')}) is on the ledger, but no sealed batch has it`);
  }
  for (const [h, txs] of ledger.byImageHash) {
    if (txs.length > 1) {
      duplicates += 1;
      violations.ledgerOnce.push(`${h}${ourHashes.has(h) ? '' : ' (not sent by this run)'} is on the ledger ${txs.length} times: ${txs.join(', ')}`);
    }
  }
  for (const [h, receipt] of ledger.anchorTxCount === 0 ? [] : receipts) {
    const tx = receipt.ledger?.tx_hash?.toLowerCase();
    const root = receipt.ledger?.merkle?.root;
    const direct = tx ? ledger.txs.get(tx) : undefined;
    const batchRoot = tx ? ledger.batchTxs.get(tx) : undefined;
    if (!direct && !batchRoot) violations.ledgerOnce.push(`${h}: its receipt names ${tx ?? 'no transaction'}, which is not on the chain`);
    else if (root !== undefined ? batchRoot !== root : direct !== h) {
      violations.ledgerOnce.push(`${h}: its receipt's transaction ${tx} carries ${direct ?? `root ${batchRoot}`}, not ${root !== undefined ? `root ${root}` : h}`);
    }
  }
  const orphanTxs = [...ledger.byImageHash.keys()].filter((h) => ourHashes.has(h) && !verified.get(h)?.verified);

  // 4. no fork
  let forks = 0;
  for (const device of devices) {
    const sent = records.filter((r) => r.device === device.id);
    const byIndex = new Map<number, string[]>();
    for (const h of [...sent.map((r) => r.imageHash), ...probes.filter((p) => p.device === device.id).map((p) => p.imageHash)]) {
      const receipt = receipts.get(h);
      if (!receipt) continue;
      const idx = receipt.device?.chain_index;
      if (receipt.device?.public_key_hex !== device.publicKeyHex || typeof idx !== 'number') {
        violations.noFork.push(`${h}: receipt names device ${receipt.device?.public_key_hex ?? '?'} index ${String(idx)}, not device ${device.id}`);
        continue;
      }
      byIndex.set(idx, [...(byIndex.get(idx) ?? []), h]);
    }
    for (const [idx, hs] of byIndex) {
      const expected = device.hashes[idx];
      if (hs.length > 1) {
        forks += 1;
        violations.noFork.push(`device ${device.id} index ${idx} has ${hs.length} verified hashes: ${hs.join(', ')} (sent: ${expected ?? 'none'})`);
      } else if (hs[0] !== expected) {
        forks += 1;
        violations.noFork.push(`device ${device.id} index ${idx} holds ${hs[0] ?? '?'}, but the device sent ${expected ?? 'nothing'} there`);
      }
    }
    for (const r of sent.filter((x) => x.settledAt !== undefined)) {
      if (!byIndex.get(r.index)?.includes(r.imageHash)) violations.noFork.push(`device ${device.id} index ${r.index}: settled ${r.imageHash} has no verified receipt at that index`);
    }
    const chain = await readChain(service, device.publicKeyHex).catch((error: unknown) => {
      violations.noFork.push(`device ${device.id}: v1 chain/all could not be read: ${(error as Error).message}`);
      return null;
    });
    if (chain === null) continue;
    if (!chain) {
      if (sent.some((r) => r.settledAt !== undefined)) violations.noFork.push(`device ${device.id}: v1 chain/all knows no chain`);
      continue;
    }
    if (chain.verdict !== 'complete') violations.noFork.push(`device ${device.id}: v1 chain integrity says ${chain.verdict} (${chain.detail})`);
    for (const entry of chain.entries) {
      if (entry.image_hash !== device.hashes[entry.chain_index]) {
        violations.noFork.push(`device ${device.id} index ${entry.chain_index}: chain/all lists ${entry.image_hash}, the device sent ${device.hashes[entry.chain_index] ?? 'nothing'}`);
      }
    }
  }
  for (const p of probes) {
    if (p.status === 200) violations.noFork.push(`fork probe: a second photo ${p.imageHash} at device ${p.device} index ${p.index} was accepted (200)`);
  }

  // 5. exact charging (the reconciler may refund late: wait up to the limit after the last restart)
  const registered = new Set(registrations.map((r) => r.imageHash));
  const held = () => allHashes.filter((h) => verified.get(h)?.verified).length + [...registered].filter((h) => verified.get(h)?.registered_at).length;
  let charged: number | null = null;
  let lastUsed: number | null = null;
  await waitFor('usage to equal the anchors held', Math.max(5_000, readDeadline - Date.now()), async () => {
    charged = await readUsed(service, account).catch(() => null);
    if (charged !== null && charged === held()) return true;
    // Anchors that were stuck may still complete meanwhile: re-read those.
    if (charged !== lastUsed) {
      lastUsed = charged;
      await pool(
        allHashes.filter((h) => !verified.get(h)?.verified),
        8,
        (h) => readHash(h, false),
      );
    }
    return undefined;
  }, 500).catch(() => undefined);
  if (charged === null) violations.charging.push('GET /api/v2/account/usage could not be read');
  else if (charged !== held()) {
    violations.charging.push(`usage says used=${charged}, the account holds ${held()} verified anchors and registrations (${charged - held() > 0 ? 'overcharged' : 'undercharged'} by ${Math.abs(charged - held())})`);
  }

  // 6. exact statistics, derived from the evidence table's changes across every kill: from the
  // figures of the fresh service (the key's registration transaction) plus what this run holds.
  const anchorsHeld = allHashes.filter((h) => verified.get(h)?.verified);
  const expectedStats = {
    registered: baselineStats.registered + [...registered].filter((h) => verified.get(h)?.registered_at).length,
    anchored: baselineStats.anchored + anchorsHeld.length,
    devices: baselineStats.devices + anchorsHeld.filter((h) => receipts.get(h)?.device?.chain_index === 0).length,
    transactions: baselineStats.transactions + new Set(anchorsHeld.map((h) => receipts.get(h)?.ledger?.tx_hash?.toLowerCase())).size,
  };
  let statsNow: StatTotals | undefined;
  await waitFor('the statistics to converge', 20_000, async () => {
    statsNow = await readStats(service).catch(() => undefined);
    return statsNow && JSON.stringify(statsNow) === JSON.stringify(expectedStats) ? true : undefined;
  }, 250).catch(() => undefined);
  if (JSON.stringify(statsNow) !== JSON.stringify(expectedStats)) {
    violations.stats.push(`GET /api/v1/stats totals ${JSON.stringify(statsNow)} after 20 s, expected ${JSON.stringify(expectedStats)} (the fresh service's ${JSON.stringify(baselineStats)} plus what the run holds)`);
  }

  // 7. webhooks: every anchored photo's event delivered, each fact under one webhook-id, one delivery per event.
  let webhookRequests: CrashReport['webhookRequests'];
  if (webhooks) {
    const judged = await judgeWebhooks(webhooks, service, anchorsHeld, readDeadline);
    violations.webhooks.push(...judged.violations);
    webhookRequests = { received: judged.received, events: judged.events };
  }

  for (const [event, inflight] of inFlightAt) {
    const settled = inflight.map((r) => r.settledAt).filter((x): x is number => x !== undefined);
    if (event.readyAt !== undefined && settled.length === inflight.length && settled.length > 0) event.recoveryMs = Math.max(0, Math.max(...settled) - event.readyAt);
  }
  const interruptedRecords = records.filter((r) => r.interruptions.length > 0);
  // Measured now: a restarted service may answer before the harness's health poll sees it ready.
  for (const r of interruptedRecords) {
    const ready = readyAfterKill(r.interruptions.at(-1) as number);
    if (r.settledAt !== undefined && ready !== undefined) r.settleAfterRestartMs = Math.max(0, r.settledAt - ready);
  }
  const settleTimes = interruptedRecords.map((r) => r.settleAfterRestartMs).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
  if (orphanTxs.length) log(`note: ${orphanTxs.length} hashes are on the ledger without verified evidence: ${orphanTxs.slice(0, 5).join(', ')}${orphanTxs.length > 5 ? ', …' : ''}`);
  const report: CrashReport = {
    seed,
    devices: options.devices,
    photos: options.photos,
    dataDir,
    logFile,
    faults,
    hashes: records.length,
    requestsSent,
    interrupted: interruptedRecords.length,
    settled200: records.filter((r) => r.how === '200').length,
    settled409Anchored: records.filter((r) => r.how === '409-anchored').length,
    unsettled: records.filter((r) => r.settledAt === undefined).length,
    rejected: records.filter((r) => r.rejected).length,
    maxSettleAfterRestartMs: settleTimes.at(-1) ?? null,
    p50SettleAfterRestartMs: settleTimes.length ? (settleTimes[Math.floor((settleTimes.length - 1) / 2)] as number) : null,
    ledgerAnchorTransactions: ledger.anchorTxCount,
    ledgerWithoutEvidence: orphanTxs,
    duplicates,
    rootsTwice,
    readProbes,
    crashPoints: pointOutcomes,
    forks,
    forkProbes: { sent: probes.length, refused: probes.filter((p) => p.status >= 400 && p.status < 500).length, accepted: probes.filter((p) => p.status === 200).length },
    charged,
    anchorsHeld: held(),
    violations,
    ...(webhookRequests ? { webhookRequests } : {}),
    durationMs: Date.now() - t0,
  };
  return report;
}
