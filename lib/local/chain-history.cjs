/**
 * Block history of the local chain, kept by the Hardhat node process itself (required by
 * infra/hardhat.config.cjs; plain CommonJS because the node runs without the TypeScript loader).
 *
 * Hardhat keeps no state on disk. So that a restart brings back the SAME chain (block numbers,
 * block timestamps and, when nothing but our own transactions was ever mined, block hashes), the
 * node appends one line per mined block to a journal (LOCAL_CHAIN_HISTORY_FILE, JSON lines:
 * `{"n":number,"t":timestamp,"h":hash,"tx":[hashes]}`, block 0 first; `tx` omitted when empty).
 * At the next start, before the JSON-RPC server listens, it replays that journal into the fresh,
 * in-process provider (no HTTP round trip per call, which would cost more than the call itself):
 *   - the genesis block is pinned by LOCAL_CHAIN_INITIAL_DATE (chain.ts reads it from the
 *     journal's first line), so block 0 has the same hash, or the journal belongs to another chain
 *     (other wallet, chain id) and is set aside as `<file>.stale`;
 *   - interval mining off; for each journaled block with transactions, the signed raw bytes (asked
 *     once from the parent over IPC: `{type:'history-raws?'}` → `{type:'history-raws', raws:[[hash,
 *     raw], …]}`, from the ledger records in DynamoDB) are sent with eth_sendRawTransaction: a block
 *     of one transaction is automined at `evm_setNextBlockTimestamp`, a block of several is filled
 *     with automine off and mined with `evm_mine(timestamp)`: same transactions, same block, same
 *     time;
 *   - a run of empty blocks (interval mining) whose timestamps step evenly is mined at once with
 *     `evm_setNextBlockTimestamp` + `hardhat_mine(count, step)`;
 *   - a transaction whose raw bytes are unknown (not one of ours, or records lost) ends the replay
 *     there: the journal is cut after the last block replayed, and the parent's ordinary re-send
 *     (LedgerSender.replay) sends what is left into new blocks;
 *   - then the configured mining mode and logging are restored, and the node's clock offset
 *     (moved by the past timestamps) is set back to the wall clock, so new blocks get today's time.
 * The parent hears `{type:'history-replayed', report}` before the server listens.
 * Journal lines are appended synchronously after each block, before any JSON-RPC answer can name
 * it (journalNewBlocks), and on SIGTERM before the node exits: a crash can lose only blocks nobody
 * was told of (their transactions are re-sent by LedgerSender.replay into new blocks); a line torn
 * by a crash is dropped at the next start.
 */
'use strict';
const fs = require('node:fs');

const hex = (n) => `0x${n.toString(16)}`;

/**
 * The journal's blocks, consecutive from 0; stops at the first torn or out-of-order line (a crash
 * while appending), and then rewrites the file without what follows, so that new blocks are never
 * appended behind a torn line.
 */
function readJournal(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return [];
    throw error;
  }
  const blocks = [];
  const lines = text.split('\n');
  let clean = true;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line) {
      if (i === lines.length - 1) continue;
      clean = false;
      break;
    }
    let b;
    try {
      b = JSON.parse(line);
    } catch {
      clean = false;
      break;
    }
    if (!b || b.n !== blocks.length || !Number.isInteger(b.t) || typeof b.h !== 'string') {
      clean = false;
      break;
    }
    blocks.push(b);
  }
  if (!clean && blocks.length > 0) rewrite(file, blocks);
  return blocks;
}

const lineOf = (b) => `${JSON.stringify(b.tx && b.tx.length ? { n: b.n, t: b.t, h: b.h, tx: b.tx } : { n: b.n, t: b.t, h: b.h })}\n`;

function rewrite(file, blocks) {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, blocks.map(lineOf).join(''), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** Asks the parent for the raw transactions (hash → raw); rejects if the parent cannot give them. */
function askRaws() {
  return new Promise((resolve, reject) => {
    if (!process.connected) {
      reject(new Error('no parent to ask for the raw transactions'));
      return;
    }
    // The channel is unref'd (infra/hardhat.config.cjs) and nothing else holds the event loop yet
    // (the server is not listening): hold it while waiting, or the process would just end.
    process.channel?.ref();
    const onMessage = (message) => {
      if (!message || message.type !== 'history-raws') return;
      process.off('message', onMessage);
      process.channel?.unref();
      if (message.error) reject(new Error(message.error));
      else resolve(new Map(message.raws));
    };
    process.on('message', onMessage);
    process.send({ type: 'history-raws?' });
  });
}

/** Past timestamps (and a pinned genesis date) leave the node's clock behind the wall clock: catch up. */
async function catchUpClock(r) {
  const offset = Number(await r('evm_increaseTime', [0]));
  if (offset < 0) await r('evm_increaseTime', [-offset]);
}

async function replay(provider, file, blocks, options) {
  const r = (method, params = []) => provider.request({ method, params });
  const started = performance.now();
  const cpu = process.cpuUsage();
  const report = { blocks: 0, transactions: 0, journaled: blocks.length, hashesMatch: null, stoppedAt: null, reason: null, ms: 0, cpuMs: 0 };
  const finish = () => {
    const used = process.cpuUsage(cpu);
    report.ms = Math.round(performance.now() - started);
    report.cpuMs = Math.round((used.user + used.system) / 1000);
  };
  const genesis = await r('eth_getBlockByNumber', ['0x0', false]);
  if (blocks.length === 0 || blocks[0].h !== genesis.hash) {
    if (blocks.length > 0) {
      fs.renameSync(file, `${file}.stale`);
      report.reason = 'journal of another chain (set aside)';
    }
    rewrite(file, [{ n: 0, t: Number(genesis.timestamp), h: genesis.hash }]);
    report.journaled = 0;
    await catchUpClock(r);
    finish();
    return { report, head: 0 };
  }
  let head = 0;
  if (blocks.length > 1) {
    const raws = await askRaws();
    await r('hardhat_setLoggingEnabled', [false]);
    let automine = false;
    await r('evm_setAutomine', [false]);
    await r('evm_setIntervalMining', [0]);
    let i = 1;
    while (i < blocks.length) {
      const b = blocks[i];
      if (!b.tx || b.tx.length === 0) {
        // A run of empty blocks stepping evenly from the block before: one call.
        const step = b.t - blocks[i - 1].t;
        let j = i;
        while (j + 1 < blocks.length && !(blocks[j + 1].tx && blocks[j + 1].tx.length) && blocks[j + 1].t - blocks[j].t === step) j++;
        const count = j - i + 1;
        if (count === 1 || step < 0) {
          await r('evm_mine', [b.t]);
          j = i;
        } else {
          await r('evm_setNextBlockTimestamp', [b.t]);
          await r('hardhat_mine', [hex(count), hex(step)]);
        }
        head = j;
        i = j + 1;
        continue;
      }
      const stop = (why) => {
        report.stoppedAt = b.n;
        report.reason = why;
      };
      if (b.tx.some((hash) => !raws.has(hash))) {
        stop('a transaction of this block is not in the ledger records');
        break;
      }
      try {
        if (b.tx.length === 1) {
          // One transaction (automine's blocks): mined as it is sent, at the block's time. About
          // 40 % less CPU than mempool + evm_mine.
          if (!automine) await r('evm_setAutomine', [(automine = true)]);
          await r('evm_setNextBlockTimestamp', [b.t]);
          await r('eth_sendRawTransaction', [raws.get(b.tx[0])]);
        } else {
          if (automine) await r('evm_setAutomine', [(automine = false)]);
          const sent = await Promise.allSettled(b.tx.map((hash) => r('eth_sendRawTransaction', [raws.get(hash)])));
          const refused = sent.find((x) => x.status === 'rejected');
          if (refused) {
            // Not half a block: what went into the mempool leaves it again.
            for (const hash of b.tx) await r('hardhat_dropTransaction', [hash]).catch(() => undefined);
            throw refused.reason;
          }
          await r('evm_mine', [b.t]);
        }
      } catch (e) {
        stop(`the node refused a transaction of this block (${String(e && e.message).slice(0, 120)})`);
        break;
      }
      report.transactions += b.tx.length;
      head = i;
      i++;
    }
    report.blocks = head;
    // Blocks are chained by hash: the last one replayed matches only if every one before it does.
    const last = await r('eth_getBlockByNumber', [hex(head), false]);
    report.hashesMatch = last.hash === blocks[head].h;
    if (head < blocks.length - 1) rewrite(file, blocks.slice(0, head + 1));

    // The configured mining mode, logging, and the wall clock again for new blocks.
    await r('evm_setAutomine', [options.blockTimeMs === 0]);
    if (options.blockTimeMs > 0) await r('evm_setIntervalMining', [options.blockTimeMs]);
    await r('hardhat_setLoggingEnabled', [options.loggingEnabled]);
  }
  await catchUpClock(r);
  finish();
  return { report, head };
}

/**
 * Appends every block mined after `head` to the journal, as soon as it is mined, and before any
 * answer of the node can name it: every JSON-RPC request is answered only once the journal holds
 * every block mined so far (one in-process eth_blockNumber per request, and the lines of new
 * blocks appended synchronously). A block some client saw (a receipt, a block number) is then never
 * lost by a crash of the node: the restart rebuilds it with the same number, time and hash, so a
 * final receipt the service stored stays true. (Measured before: a node killed between mining a
 * block and journaling it came back without it; its transaction was re-sent into a new block, and
 * a record whose final receipt named the lost block no longer verified.)
 */
async function journalNewBlocks(provider, file, head) {
  const inner = provider.request.bind(provider);
  const r = (method, params = []) => inner({ method, params });
  let journaled = head;
  /** One pass: journals every block mined up to the moment it starts. */
  const catchUpOnce = async () => {
    const latest = Number(await r('eth_blockNumber'));
    let lines = '';
    for (let n = journaled + 1; n <= latest; n++) {
      const b = await r('eth_getBlockByNumber', [hex(n), false]);
      lines += lineOf({ n, t: Number(b.timestamp), h: b.hash, tx: b.transactions });
    }
    if (lines) {
      fs.appendFileSync(file, lines);
      journaled = latest;
    }
  };
  // Passes run one at a time, in order; callers that arrive before the next pass has started share
  // it (it reads the head when it starts, after they asked), so the queue never grows.
  let tail = Promise.resolve();
  let queued = null;
  const pass = () => {
    if (queued) return queued;
    const p = tail
      .catch(() => undefined)
      .then(() => {
        if (queued === p) queued = null;
        return catchUpOnce();
      });
    queued = p;
    tail = p;
    return p;
  };
  /**
   * Resolves once the journal holds every block mined up to now (the blocks an answer computed
   * before this call can name); rejects if it cannot be written. Blocks mined later are not waited
   * for: under a steady stream of transactions the head keeps moving, and an answer that waited
   * for "every block so far" again and again was held for seconds (measured: a "nonce too high"
   * answered 3.3 s late, so a sender gave up on a nonce that had been filled meanwhile). At most
   * two passes: the one running (which may have started before) and the next.
   */
  const journaledNow = async () => {
    const target = Number(await r('eth_blockNumber'));
    while (journaled < target) await pass();
  };
  provider.request = async (args) => {
    const result = await inner(args);
    // An answer that could name a block not yet journaled waits for the journal (a failure to
    // write it fails the request: better no answer than one about a block a crash may lose).
    if (args.method !== 'eth_subscribe' && args.method !== 'eth_unsubscribe') await journaledNow();
    return result;
  };
  const background = () => {
    pass().catch((error) => console.error(`chain history: could not journal a block: ${error && error.message}`));
  };
  provider.on('notification', background);
  // EDR drops a subscription after 5 minutes (measured: the journal stopped 5 min after start), so
  // it is renewed every minute; a poll every 2 s catches anything a renewal gap let through.
  let subscription = await r('eth_subscribe', ['newHeads']);
  const renew = setInterval(() => {
    const old = subscription;
    r('eth_subscribe', ['newHeads'])
      .then((id) => {
        subscription = id;
        return r('eth_unsubscribe', [old]);
      })
      .catch(() => undefined);
  }, 60_000);
  renew.unref();
  const poll = setInterval(background, 2000);
  poll.unref();
  background();
  // A stop (SIGTERM from chain.ts) journals the blocks mined since the last line first.
  process.once('SIGTERM', () => {
    setTimeout(() => process.exit(0), 2000).unref();
    const flush = () => pass();
    flush().then(
      () => process.exit(0),
      () => process.exit(0),
    );
  });
}

/**
 * Wraps TASK_NODE_GET_PROVIDER: replays the journal into the provider before the server is
 * created, then journals every new block. No-op unless LOCAL_CHAIN_HISTORY_FILE is set.
 */
function installChainHistory({ subtask, taskName, blockTimeMs, loggingEnabled }) {
  const file = process.env.LOCAL_CHAIN_HISTORY_FILE;
  if (!file) return;
  subtask(taskName).setAction(async (args, _hre, runSuper) => {
    const provider = await runSuper(args);
    const { report, head } = await replay(provider, file, readJournal(file), { blockTimeMs, loggingEnabled });
    if (process.connected) process.send({ type: 'history-replayed', report });
    await journalNewBlocks(provider, file, head);
    return provider;
  });
}

module.exports = { installChainHistory, readJournal };
