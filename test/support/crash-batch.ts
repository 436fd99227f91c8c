/**
 * The crash harness's batch phone (operation 'batch', issue 36): consecutive photos of one device
 * in one POST /api/v2/evidence/anchor/batch, and after a kill the identical request again until
 * every entry settled. Like the rest of the harness, nothing here imports the service's code.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ANCHOR_PATH, type DeviceChain } from './crash-client.js';
import type { HashRecord, Problem } from './crash-report.js';

export const BATCH_PATH = '/api/v2/evidence/anchor/batch';

/** A batch request's photos and its exact body, sent again unchanged until they settle. */
export interface PendingBatch {
  records: HashRecord[];
  body: string;
}

/** What the batch phone needs of the run. */
export interface BatchPhone {
  base(): string;
  apiKey: string;
  random(): number;
  giveUpAt(record: HashRecord): number;
  settle(record: HashRecord, how: '200' | '409-anchored'): void;
  /** Counts one request sent. */
  sent(): void;
  /** The public verify says the hash is anchored (a 409 hash_already_anchored that settles it). */
  verified(imageHash: string): Promise<boolean>;
}

/** The next `size` photos of `device` as one batch. */
export function nextBatch(device: DeviceChain, size: number): PendingBatch {
  const entries = Array.from({ length: size }, () => device.nextBody());
  return {
    body: JSON.stringify({ anchors: entries.map((e) => JSON.parse(e.body) as unknown) }),
    records: entries.map((e) => ({
      device: device.id, index: e.index, imageHash: e.imageHash, body: e.body, path: ANCHOR_PATH, attempts: 1, firstSentAt: Date.now(),
      interruptions: [], settledAt: undefined, how: undefined, settleAfterRestartMs: undefined, lastAnswer: undefined, rejected: undefined, gaveUp: false,
    })),
  };
}

type Results = { results: { status: number; problem?: Problem }[] };

/** Settles the entries a 200 batch answer anchored; records the others' answers (a refusal for good marks the record rejected). */
export async function takeAnswer(phone: BatchPhone, batch: PendingBatch, text: string): Promise<void> {
  const { results } = JSON.parse(text) as Results;
  for (const [i, record] of batch.records.entries()) {
    const result = results[i];
    if (record.settledAt || record.rejected || !result) continue;
    if (result.status === 200) {
      phone.settle(record, '200');
      continue;
    }
    record.lastAnswer = `${result.status} ${result.problem?.code ?? ''}: ${result.problem?.detail ?? ''}`;
    if (result.status === 409 && result.problem?.code === 'hash_already_anchored' && !/being anchored/i.test(result.problem.detail ?? '')) {
      if (await phone.verified(record.imageHash)) phone.settle(record, '409-anchored');
    } else if (result.status < 500 && result.status !== 429 && result.problem?.code !== 'previous_entry_failed') {
      record.rejected = record.lastAnswer;
    }
  }
}

/** Sends the identical batch until every entry settled (or was refused for good, or the phone gave up). */
export async function sendBatchUntilSettled(phone: BatchPhone, batch: PendingBatch): Promise<void> {
  let backoff = 250;
  for (;;) {
    const open = batch.records.filter((r) => !r.settledAt && !r.rejected);
    if (open.length === 0) return;
    if (open.some((r) => Date.now() > phone.giveUpAt(r))) {
      for (const r of open) r.gaveUp = true;
      return;
    }
    for (const r of open) r.attempts += 1;
    phone.sent();
    try {
      const res = await fetch(`${phone.base()}${BATCH_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': phone.apiKey },
        body: batch.body,
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      if (res.status === 200) await takeAnswer(phone, batch, text);
      else {
        for (const r of open) r.lastAnswer = `${res.status} ${text.slice(0, 200)}`;
        if (res.status < 500 && res.status !== 429) {
          for (const r of open) r.rejected = r.lastAnswer;
          return;
        }
      }
    } catch (error) {
      for (const r of open) r.lastAnswer = `network error: ${(error as Error).message}`;
    }
    if (batch.records.every((r) => r.settledAt || r.rejected)) return;
    await sleep(backoff * (0.75 + phone.random() * 0.5));
    backoff = Math.min(backoff * 2, 2000);
  }
}
