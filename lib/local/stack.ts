/**
 * The whole local stack, once lib/local/start.ts (`npm start`) has loaded the configuration and
 * found every port it binds free: dynalite (on disk under DATA_DIR) through the real AWS SDK, a
 * Hardhat node over JSON-RPC with every transaction the service ever sent replayed into it, the
 * embedded RFC 3161 TSA, and the API dispatching to the same Hono apps the Lambda handlers wrap.
 * Ctrl-C stops every part; a second start reuses DATA_DIR.
 *
 * Process layout: this process serves the API (and the TSA, in-process); dynalite
 * (lib/local/dynamo-child.mjs) and the Hardhat node each run in a child process of their own,
 * supervised (lib/local/supervisor.ts): one that dies is restarted on the same port and data,
 * the ledger's transactions are replayed into a fresh node, and health says `restarting` until
 * then. The children exit by themselves when this process is gone, SIGKILL included.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import { getLedgerSender, getPqRegistrationDeps, getReconcileDeps, ledgerSenderForKey, useProofService } from '../deps/anchoring.js';
import { readKeyRegistry } from '../crypto/key-windows.js';
import { localWalletFiles, readLocalWalletKey } from '../ledger/local-wallet.js';
import { computeAddress } from 'ethers';
import { getArchiveDeps } from '../deps/archive-job.js';
import { getDb } from '../deps/core.js';
import { runArchivePass } from '../evidence/archive.js';
import { reconcileAnchors } from '../evidence/reconcile.js';
import { ensurePqKeyRegistered } from '../evidence/pq-registration.js';
import { getDerivedStores } from '../deps/derived.js';
import { forgetLocalChanges, localChangeFeed } from './change-feed.js';
import { ensureTables } from '../store/tables.js';
import { describeError, log } from '../log.js';
import { ensureLocalSecrets } from './bootstrap.js';
import { jsonRpc, startLocalChain, type LocalChain } from './chain.js';
import { ledgerRaws, resendRetiredWallets, walletsInOrder } from './chain-raws.js';
import { finishWalletRotation } from './wallet-rotation.js';
import { startDynamoProcess, type DynamoProcess } from './dynamo-process.js';
import { PortInUseError } from './net.js';
import { startLocalProofThreads } from './proof-threads.js';
import { exitWithParent } from './parent-watch.js';
import { portInUseLine, type LocalPlan } from './preflight.js';
import { buildLocalApi, listenLocalApi } from './server.js';
import { retryStartStep } from './start-retry.js';
import { startLocalWebhookWorker } from './webhook-worker.js';
import { Supervisor } from './supervisor.js';

/** How often `npm start` applies the evidence table's changes (the statistics' lag: at most about a second and a half, stated in the API reference; in AWS the stream function batches for up to 1 s as well). */
const CHANGE_FEED_INTERVAL_MS = 1000;

/** Starts every part of `plan`, prints one line per part and `ready in … ms` (from the process's start); exits on failure. */
export async function runLocalStack(config: Config, plan: LocalPlan): Promise<void> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const since = () => `${Math.round(performance.now())} ms`;

  // The safety sweep (decisions.md "Cost"): dynalite can lose an index entry when it is killed, so
  // each table is read once in full, RECONCILE_SAFETY_SCAN_ITEMS items per reconciler pass, at
  // start and after each restart of the database; otherwise the reconciler reads the indexes alone.
  type SweepState = 'restart' | 'continue' | 'done';
  const sweep: { evidence: SweepState; holds: SweepState; generation: number } = { evidence: 'restart', holds: 'restart', generation: 0 };
  const sweepFromStart = () => {
    sweep.evidence = 'restart';
    sweep.holds = 'restart';
    sweep.generation++;
  };
  const sweepSteps = () => {
    const step = (state: SweepState) =>
      state === 'done' || config.reconcileSafetyScanItems === 0 ? undefined : { items: config.reconcileSafetyScanItems, restart: state === 'restart' };
    return { evidence: step(sweep.evidence), holds: step(sweep.holds) };
  };
  const sweptThisPass = (swept: { evidence?: boolean; holds?: boolean } | undefined, generation: number) => {
    // A step that ran moves its sweep on; a sweep restarted meanwhile (the database restarted during the pass) stays restarted.
    if (generation !== sweep.generation) return;
    for (const table of ['evidence', 'holds'] as const) {
      const done = swept?.[table];
      if (done === undefined || sweep[table] === 'done') continue;
      sweep[table] = done ? 'done' : 'continue';
    }
  };

  // The crash-point sweep's fault hook (lib/local/fault-hook.ts), before any port is built.
  const faultHook = process.env.EVIDENCE_FAULT_KILL_AT
    ? (await import('./fault-hook.js')).installFaultHook({
        killAt: Number(process.env.EVIDENCE_FAULT_KILL_AT),
        when: process.env.EVIDENCE_FAULT_KILL_WHEN === 'after' ? 'after' : 'before',
      })
    : undefined;
  // EVIDENCE_FAULT_ARM=feed: the change feed's applying is armed instead of requests and start-up steps.
  const armFeed = faultHook && process.env.EVIDENCE_FAULT_ARM === 'feed' ? faultHook : undefined;

  const stops: (() => Promise<void>)[] = [];
  let stopping: Promise<never> | null = null;
  /** Stops every part once, in reverse order of start; a second call waits for the first. */
  function stopAll(code: number, message?: string): Promise<never> {
    stopping ??= (async () => {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
      if (message) say(message);
      process.exit(code);
    })();
    return stopping;
  }
  // With its parent gone, stdout may be a pipe nobody reads: stopping must not fail on it.
  process.stdout.on('error', () => undefined);
  // Ctrl-C reaches every process of the terminal's group, and npm forwards it too: a SIGINT that
  // comes with the first one is the same Ctrl-C; one pressed again later forces the exit (the
  // children then exit by themselves: they watch this process).
  let firstSigint = 0;
  process.on('SIGINT', () => {
    if (firstSigint && Date.now() - firstSigint > 1000) process.exit(130);
    firstSigint ||= Date.now();
    void stopAll(0, 'stopped: api, ledger node and dynamodb');
  });
  process.on('SIGTERM', () => void stopAll(0));
  // Its parent gone (npm or its shell, or a test, killed with SIGKILL): stop too.
  exitWithParent((why) => void stopAll(1, `stopping: ${why}`), { grandparent: Boolean(process.env.npm_lifecycle_event) });

  try {
    await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    const secrets = await ensureLocalSecrets(config);
    say(`data       ${config.dataDir}${secrets.created.length ? ` (created: ${secrets.created.join(', ')})` : ' (reused)'}`);

    // The two children start side by side: dynalite (unless DYNAMODB_ENDPOINT points at another
    // server), then the tables; the Hardhat node (unless LEDGER_RPC_URL points at another node).
    const { embeddedDynamo, localChain } = plan;
    const startDynamo = () =>
      startDynamoProcess({ port: config.aws.dynamoPort, dir: path.join(config.dataDir, 'dynamodb'), logFile: path.join(config.dataDir, 'dynamodb.log') });
    // Meanwhile: the tables as soon as dynalite answers, and the API's modules loaded.
    const dynamoP = embeddedDynamo ? startDynamo() : Promise.resolve(null);
    const retry = <T>(what: string, step: () => Promise<T>) => retryStartStep(what, step, { onRetry: (line) => say(`wait       ${line}`) });
    const tablesP = dynamoP.then(() => retry('the tables', () => ensureTables(getDb(), config.tables, { afterRebuild: (table) => forgetLocalChanges(config, table) })));
    // Every wallet that ever sent (a rotation's pending new one included), the genesis one first.
    const everyWallet = async () => {
      if (config.ledger.walletScheme !== 'local' || config.ledger.walletPrivateKey) return secrets.walletAddress ? [secrets.walletAddress.toLowerCase()] : [];
      const registered = (await readKeyRegistry(config.keyRegistryFile)).keys.filter((k) => k.kind === 'ledger-wallet').map((k) => k.address ?? k.kid);
      const pending = await readLocalWalletKey(localWalletFiles(config.ledger.walletKeyFile).next).catch(() => null);
      const current = (await readLocalWalletKey(config.ledger.walletKeyFile).catch(() => null)) ?? secrets.walletPrivateKey;
      const address = (key: string) => (key ? computeAddress(key) : '');
      return walletsInOrder(address(secrets.genesisPrivateKey), [...registered, address(current)], pending ? address(pending) : address(current));
    };
    const startChain = () =>
      startLocalChain({
        port: config.ledger.rpcPort,
        blockTimeMs: config.ledger.blockTimeMs,
        chainId: config.ledger.chainId,
        // The wallet the genesis funded, forever (a rotated wallet is funded by its predecessor).
        accounts: [{ privateKey: secrets.genesisPrivateKey, balanceWei: 10n ** 24n }],
        logFile: path.join(config.dataDir, 'chain.log'),
        // The node rebuilds its blocks from its journal, with the raw transactions of the ledger records.
        history: {
          file: path.join(config.dataDir, 'chain-blocks.jsonl'),
          raws: async () => {
            await tablesP;
            const all = await Promise.all((await everyWallet()).map((a) => ledgerRaws(getDb(), config.tables.ledger, a)));
            return all.flat();
          },
        },
      });
    const chainP = localChain ? startChain() : Promise.resolve(null);
    const apiP = buildLocalApi();
    const [dynamoStart, chainStart, tablesDone, apiBuilt] = await Promise.allSettled([dynamoP, chainP, tablesP, apiP]);
    for (const s of [dynamoStart, chainStart]) if (s.status === 'fulfilled' && s.value) stops.push(() => s.value!.stop());
    for (const s of [dynamoStart, chainStart, tablesDone, apiBuilt]) if (s.status === 'rejected') throw s.reason;
    stops.length = 0;

    let dynamoPid = '';
    if (dynamoStart.status === 'fulfilled' && dynamoStart.value) {
      const dynamo = new Supervisor<DynamoProcess>(
        dynamoStart.value,
        {
          healthName: 'database',
          label: 'dynamodb (dynalite)',
          start: startDynamo,
          // The tables live on disk; this only checks that they are all there.
          afterStart: async () => {
            // dynalite may have lost an index entry when it died: the tables are swept once more.
            sweepFromStart();
            return (await ensureTables(getDb(), config.tables, { afterRebuild: (table) => forgetLocalChanges(config, table) })).length ? 'tables re-created' : undefined;
          },
        },
        say,
      );
      stops.push(() => dynamo.stop());
      dynamoPid = `, pid ${dynamo.pid}`;
    }
    const created = tablesDone.status === 'fulfilled' ? tablesDone.value : [];
    say(`dynamodb   ${config.aws.dynamoEndpoint} (dynalite${dynamoPid}, ${created.length ? `created ${created.length} tables` : 'tables reused'})`);

    if (chainStart.status === 'fulfilled' && chainStart.value) {
      const first: LocalChain = chainStart.value;
      // The node rebuilt the journaled blocks itself (same numbers, times and hashes); the persisted
      // transactions it did not cover (never mined, or no journal yet) are re-sent in nonce order
      // into new blocks (same bytes, same hashes).
      // The wallets rotated away, in rotation order (a successor's first transactions spend its funding).
      const resendRotatedAway = async (node: LocalChain, sender: string) =>
        resendRetiredWallets(getDb(), config.tables.ledger, config.ledger.chainId, (m, p) => jsonRpc(node.url, m, p), (await everyWallet()).filter((a) => a !== sender.toLowerCase()));
      const replayAll = async (node: LocalChain, resentBefore = 0) => {
        const rotatedAway = resentBefore + (await resendRotatedAway(node, await (await getLedgerSender()).address()));
        const replay = await (await getLedgerSender()).replay();
        const n = rotatedAway + replay.resent + replay.alreadyKnown;
        const h = node.history;
        const plural = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
        const rebuilt =
          h && h.blocks > 0 ? `rebuilt ${plural(h.blocks, 'block')} with ${plural(h.transactions, 'transaction')} in ${h.ms} ms${h.hashesMatch ? ', same hashes' : ''}, ` : '';
        const stopped = h?.stoppedAt != null ? ` (journal replay stopped at block ${h.stoppedAt}: ${h.reason})` : '';
        return `${rebuilt}replayed ${n} transaction${n === 1 ? '' : 's'}${stopped}`;
      };
      const chain = new Supervisor<LocalChain>(first, { healthName: 'ledger', label: 'ledger node (hardhat)', start: startChain, afterStart: replayAll }, say);
      stops.push(() => chain.stop());
      // A wallet rotation `npm run admin -- rotate-key ledger-wallet` began: finished here, before anything sends.
      // With a rotation pending, the wallets rotated away earlier go into the node first (the old
      // wallet's funding came from them); otherwise replayAll below does it once.
      const pendingRotation = await readLocalWalletKey(localWalletFiles(config.ledger.walletKeyFile).next).catch(() => null);
      const liveKey = pendingRotation ? await readLocalWalletKey(config.ledger.walletKeyFile).catch(() => null) : null;
      const resentBefore = liveKey ? await retry('the retired wallets', () => resendRotatedAway(first, computeAddress(liveKey))) : 0;
      const rotate = () =>
        finishWalletRotation({
          walletKeyFile: config.ledger.walletKeyFile,
          keyRegistryFile: config.keyRegistryFile,
          senderFor: ledgerSenderForKey,
          balanceOf: async (a) => BigInt((await jsonRpc(first.url, 'eth_getBalance', [a, 'latest'])) as string),
          maxFeePerGasWei: BigInt(Math.ceil(config.ledger.maxFeeGwei * 1e9)),
        });
      const rotation = faultHook && !armFeed ? await faultHook.arm('wallet rotation', rotate) : await retry('the wallet rotation', rotate);
      if (rotation?.state === 'done') {
        secrets.walletAddress = rotation.to;
        say(`wallet     rotated ${rotation.from} → ${rotation.to}${rotation.fundingTxHash ? ` (funded in ${rotation.fundingTxHash})` : ''}; ${rotation.from} retired`);
      } else if (rotation) {
        say(`wallet     rotation to ${rotation.to} not finished: ${rotation.reason}`);
      }
      const replayed = await retry('the ledger replay', () => replayAll(first, resentBefore));
      say(
        `ledger     ${first.url} (hardhat, pid ${first.pid}, chain id ${first.chainId}, ${config.ledger.blockTimeMs === 0 ? 'automine' : `${config.ledger.blockTimeMs} ms blocks`}, ` +
          `wallet ${secrets.walletAddress}, ${replayed})`,
      );
    } else {
      say(`ledger     ${config.ledger.network} at the configured LEDGER_RPC_URL (chain id ${config.ledger.chainId})`);
    }

    // The local keys' proofs on worker threads (PROOF_THREADS), beside the registration below: the
    // keys are final for this start once a wallet rotation is finished (above).
    const proofsP = startLocalProofThreads(config.proofThreads);
    // Publish the ML-DSA-65 key's fingerprint on the ledger once (idempotent: nothing is sent when it is there).
    const pq = await retry('the ML-DSA key registration', async () => ensurePqKeyRegistered(await getPqRegistrationDeps()));
    say(`pq key     ${pq.registration.fingerprint.slice(0, 16)}… on the ledger in ${pq.registration.tx_hash} (${pq.sentNow ? 'registered now' : 'already registered'})`);

    say(`tsa        ${config.tsa.scheme === 'embedded' ? `embedded RFC 3161 TSA, root ${path.join(config.tsa.dir, 'root.pem')}` : 'remote RFC 3161 TSA'}`);
    const proofs = await proofsP;
    if (proofs) {
      useProofService(proofs);
      stops.push(() => proofs.close());
      say(`proofs     the ML-DSA-65 signatures and RFC 3161 tokens on ${config.proofThreads} worker thread${config.proofThreads === 1 ? '' : 's'} (PROOF_THREADS)`);
    }

    const api = apiBuilt.status === 'fulfilled' ? apiBuilt.value : await buildLocalApi();
    const server = await listenLocalApi(faultHook ? { fetch: faultHook.wrapFetch(api.fetch) } : api, { port: config.port, hostname: config.host, ...config.localHttp });
    stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    say(`api        http://${config.host}:${config.port} (health: /api/v1/health, OpenAPI: /api/openapi.json)`);

    // The scheduled Lambda's local twin (functions/jobs/reconcile.ts): a pass every few seconds over
    // the work left (the sparse indexes of unfinished anchors and of open quota holds), so a pass
    // costs the same however large the tables grow (decisions.md "Cost"), plus the safety sweep
    // while one is due. The first pass runs at once and settles what a crash left. One pass at a
    // time. The ledger's re-send job (and its health line) runs every 30 s, not on every pass.
    let reconciling = false;
    let resentAt = 0;
    const reconcile = async () => {
      if (reconciling) return;
      reconciling = true;
      try {
        const { rebroadcast, ...deps } = await getReconcileDeps();
        const resend = Date.now() - resentAt >= 30_000;
        if (resend) resentAt = Date.now();
        const generation = sweep.generation;
        const report = await reconcileAnchors(resend ? { ...deps, rebroadcast } : deps, { sweep: sweepSteps() });
        sweptThisPass(report.swept, generation);
      } catch (error) {
        log.warn('reconcile failed', describeError(error));
      } finally {
        reconciling = false;
      }
    };
    void reconcile();
    const timer = setInterval(() => void reconcile(), config.reconcileIntervalMs);
    timer.unref();
    stops.push(async () => clearInterval(timer));

    // The archive job's local twin (functions/jobs/archive.ts): RFC 4998 evidence records for what
    // was anchored (one archive timestamp per group) and the renewals that are due. One pass at a time.
    // Until it reaches the table's end once, each pass also sweeps 1,000 evidence items: the anchors
    // of a data directory made before the archive existed, and index entries a kill lost.
    let archiving = false;
    let archiveSweep: 'start' | 'running' | 'done' = 'start';
    const archive = async () => {
      if (archiving) return;
      archiving = true;
      try {
        const sweepStep = archiveSweep === 'done' ? undefined : { items: 1000, restart: archiveSweep === 'start' };
        const report = await runArchivePass(await getArchiveDeps(), sweepStep ? { sweep: sweepStep } : {});
        if (report.swept) archiveSweep = report.swept.complete ? 'done' : 'running';
      } catch (error) {
        log.warn('archive pass failed', describeError(error));
      } finally {
        archiving = false;
      }
    };
    const archiveTimer = setInterval(() => void archive(), config.archive.intervalMs);
    archiveTimer.unref();
    stops.push(async () => clearInterval(archiveTimer));

    // The evidence-stream Lambda's local twin (functions/jobs/evidence-stream.ts): the statistics
    // and the links' anchored marks, derived from the evidence table's change feed (lib/local/change-feed.ts).
    const feed = localChangeFeed(config, getDerivedStores(), armFeed ? (apply) => armFeed.arm('change feed', apply) : undefined);
    feed.start(CHANGE_FEED_INTERVAL_MS);
    stops.push(async () => feed.stop());
    // The webhook-deliver function's local twin: the due deliveries, every second (docs/webhooks.md).
    stops.push(startLocalWebhookWorker(config));

    say(`ready in ${since()}: Ctrl-C stops every part`);
  } catch (error) {
    // A port taken after the check (another program bound it meanwhile): the same one line.
    process.stderr.write(`${error instanceof PortInUseError ? portInUseLine(error, plan.ports) : `start failed: ${describeError(error).message}`}\n`);
    await stopAll(1);
  }
}
