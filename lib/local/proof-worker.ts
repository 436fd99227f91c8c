/**
 * A worker thread of {@link ProofThreads} (proof-threads.ts): the local keys' proofs made off the
 * event loop. It builds, once, the same adapters the process would (LocalMlDsaSigner from the
 * seed, EmbeddedTsa from the PEM files' contents, both checked as they are built) from the key
 * material in `workerData`, and answers one task at a time.
 */
import { workerData } from 'node:worker_threads';
import { LocalMlDsaSigner } from '../crypto/ml-dsa.js';
import type { IssuedTimestamp } from '../crypto/ports.js';
import { EmbeddedTsa } from '../crypto/tsa/embedded.js';
import type { ProofKeys, ProofTask } from './proof-threads.js';

const keys = workerData as ProofKeys;

const signer = LocalMlDsaSigner.fromSeed(Buffer.from(keys.signerSeedHex, 'hex'));
let tsa: Promise<EmbeddedTsa> | undefined;
let pqTsa: Promise<EmbeddedTsa> | undefined;

/** The port's fields of a token (what crosses back to the event loop). */
const issued = (t: IssuedTimestamp): IssuedTimestamp => ({ response: t.response, genTime: t.genTime, serial: t.serial, policy: t.policy });

/** A build that failed is not kept: the next task builds again. */
const forget =
  (reset: () => void) =>
  (error: unknown): never => {
    reset();
    throw error;
  };

export default async function run(task: ProofTask): Promise<unknown> {
  switch (task.op) {
    case 'identity':
      return { keyId: signer.keyId };
    case 'sign':
      return signer.sign(task.message);
    case 'timestamp':
      tsa ??= EmbeddedTsa.create(keys.tsa).catch(forget(() => (tsa = undefined)));
      return issued(await (await tsa).timestamp(task.imprint));
    case 'pq-timestamp':
      if (!keys.pqTsa) throw new Error('the post-quantum TSA is off');
      pqTsa ??= EmbeddedTsa.create(keys.pqTsa).catch(forget(() => (pqTsa = undefined)));
      return issued(await (await pqTsa).issue({ imprint: task.imprint, certReq: false }));
  }
}
