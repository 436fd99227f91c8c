/**
 * The account's own list of what it did (the dashboard's "Recent evidence"). It is noted after
 * the evidence is made and stored, and only then: the list is a convenience, not a proof, so a
 * failed note is logged and the request still succeeds with its evidence (the identical retry of
 * an anchor notes it again). Nothing reads it to decide anything.
 */
import { describeError, log } from '../log.js';
import type { ActivityKind, ActivityRepository } from './activity-repository.js';

export async function noteActivity(repo: ActivityRepository, accountId: string, imageHash: string, kind: ActivityKind, at = new Date().toISOString()): Promise<void> {
  try {
    await repo.note(accountId, imageHash, kind, at);
  } catch (error) {
    log.warn('activity not noted', { kind, ...describeError(error) });
  }
}
