/**
 * `npm start`'s proofs on worker threads (PROOF_THREADS, decisions.md "Batch anchoring"): the ML-DSA-65 signature and the two RFC 3161 tokens of each anchor, made by a pool of
 * worker threads (piscina) instead of on the event loop that also serves the requests.
 *
 * Why: in AWS the keys are in KMS, and a proof is a call that waits; locally the keys are in the
 * process, and a proof is about 6 ms of CPU (liboqs ML-DSA-65, the post-quantum token's ML-DSA-65
 * signature and its check, the classic ECDSA token) on the one thread that also runs the database
 * calls. A batch anchor of 100 (bench/batch-sync.ts) was bound by that thread. A worker thread is
 * then what KMS is in AWS: the key material handed over once, a message in, a signature out.
 *
 * The workers build the very adapters the process builds (proof-worker.ts), from the same key
 * material, and the pool checks at start that they sign under the process's key id. What stays on
 * the event loop is what reads no key: the public key, the key id, the certificates. Each task has
 * a deadline; a task past it is aborted (piscina ends its worker and starts another) and its call
 * rejects, which the anchor answers as a 503 with nothing stored.
 */
import { Piscina } from 'piscina';
import type { IssuedTimestamp, PqSigner, TimestampAuthority } from '../crypto/ports.js';
import { type LocalProofKeys, localProofKeys, type ProofService } from '../deps/anchoring.js';
import { describeError, log } from '../log.js';

/** What a worker is given: the local keys (never logged; in memory only, as in the process). */
export type ProofKeys = LocalProofKeys;

/** One task of a worker (proof-worker.ts). */
export type ProofTask = { op: 'identity' } | { op: 'sign'; message: Uint8Array } | { op: 'timestamp'; imprint: Uint8Array } | { op: 'pq-timestamp'; imprint: Uint8Array };

/** A proof slower than this is abandoned (its worker ended): an anchor's proofs take milliseconds. */
const TASK_DEADLINE_MS = 15_000;

export class ProofThreads implements ProofService {
  private constructor(private readonly pool: Piscina) {}

  /**
   * Starts `threads` workers (at least one) and checks that they sign
   * under `expectedKeyId`, the key id of the process's own signer.
   */
  static async start(keys: ProofKeys, threads: number, expectedKeyId: string): Promise<ProofThreads> {
    const size = Math.max(1, threads);
    const pool = new Piscina({
      filename: new URL('./proof-worker.ts', import.meta.url).href,
      workerData: keys,
      // Always running (an idle worker holds the process open no more than an idle socket does):
      // a worker that had to start for a task would cost that task its modules' load.
      minThreads: size,
      maxThreads: size,
    });
    const threadsOf = new ProofThreads(pool);
    try {
      const { keyId } = await threadsOf.run<{ keyId: string }>({ op: 'identity' });
      if (keyId !== expectedKeyId) throw new Error(`the proof threads sign under ${keyId}, the process under ${expectedKeyId}`);
    } catch (error) {
      await pool.destroy();
      throw error;
    }
    return threadsOf;
  }

  /** The process's signer, its signatures made on the threads. */
  signer(local: PqSigner): PqSigner {
    return {
      algorithm: local.algorithm,
      keyId: local.keyId,
      publicKey: () => local.publicKey(),
      sign: (message) => this.run<Uint8Array>({ op: 'sign', message }),
    };
  }

  /** The classic TSA, its tokens issued on the threads (nonce, certificates included: EmbeddedTsa.timestamp). */
  tsa(local: TimestampAuthority): TimestampAuthority {
    return { scheme: local.scheme, certificates: () => local.certificates(), timestamp: (imprint) => this.run<IssuedTimestamp>({ op: 'timestamp', imprint }) };
  }

  /** A post-quantum token of `imprint` without its certificates (certReq false), issued on a thread. */
  pqTimestamp(imprint: Uint8Array): Promise<IssuedTimestamp> {
    return this.run<IssuedTimestamp>({ op: 'pq-timestamp', imprint });
  }

  /** Ends the workers (a process that stops). */
  close(): Promise<void> {
    return this.pool.destroy();
  }

  private run<T>(task: ProofTask): Promise<T> {
    return this.pool.run(task, { signal: AbortSignal.timeout(TASK_DEADLINE_MS) }) as Promise<T>;
  }
}

/**
 * `npm start`'s proof threads (lib/local/stack.ts): `threads` workers over the local keys, or
 * undefined when `threads` is 0, a key is not local, or they could not start (then the proofs
 * are made on the event loop: slower under load, never different; the reason is logged).
 */
export async function startLocalProofThreads(threads: number): Promise<ProofThreads | undefined> {
  if (threads === 0) return undefined;
  try {
    const local = await localProofKeys();
    if (!local) return undefined;
    return await ProofThreads.start(local.keys, threads, local.keyId);
  } catch (error) {
    log.warn('the proof threads did not start; proofs are made on the event loop', describeError(error));
    return undefined;
  }
}
