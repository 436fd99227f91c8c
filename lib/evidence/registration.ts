/**
 * Hash registration (POST /api/v2/evidence/hash; decisions.md "Evidence", "Limits"): a hash is
 * registered for the account that asks, in an item of its own (lib/store/evidence-table.ts), so
 * that each account's registration is its own fact and no other account's registration appears
 * on its verify answers or its certificate (issue 34, F1).
 *
 * Charged exactly: the request's rate unit and one quota unit are charged in one write under a
 * hold of kind `g` named after the hash (`g:<ms>:<hash>`), and the registration item records the
 * hold that paid for it. The first registration of a hash by an account keeps its unit (the settle
 * rides on a later charge); registering it again answers the first time and gives its unit back.
 * A request that dies between the charge and its answer leaves the hold open; the reconciliation
 * settles it when the account's registration names it, and otherwise bars it on the registration
 * (a request that outlived the grace can then never register under it) and refunds it
 * (lib/accounts/quota-holds.ts). Two writes on the request path, side by side with nothing: the
 * charge, then the registration.
 */
import { type LimitService, newHoldId, type QuotaReservation } from '../accounts/limits.js';
import { unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import type { Registration } from './ports.js';
import type { EvidenceRepository } from './repository.js';

export interface RegistrationDeps {
  repo: Pick<EvidenceRepository, 'register'>;
  limits: Pick<LimitService, 'settleQuota' | 'refundQuota'>;
  /** Charges the request (rate and one quota unit under `holdId`); throws the 429s. */
  charge(holdId: string): Promise<QuotaReservation>;
  clock?: () => Date;
}

export async function registerHash(deps: RegistrationDeps, imageHash: string, accountId: string): Promise<Registration> {
  const now = (deps.clock ?? (() => new Date()))();
  const reservation = await deps.charge(newHoldId('g', now, imageHash));
  let registration: Registration | 'barred';
  try {
    registration = await deps.repo.register(imageHash, accountId, now.toISOString(), reservation.holdId);
  } catch (error) {
    await refund(deps, reservation, accountId);
    throw error;
  }
  // Barred: this request outlived the grace and the reconciliation gave its unit back already.
  if (registration === 'barred') throw unavailable('database_unavailable', 'This request took too long and was given up. Retry it.', 1);
  // The account's first registration keeps its unit; a repeat gives it back.
  if (registration.first) deps.limits.settleQuota(reservation);
  else await refund(deps, reservation, accountId);
  return registration;
}

async function refund(deps: RegistrationDeps, reservation: QuotaReservation, accountId: string): Promise<void> {
  await deps.limits.refundQuota(reservation).catch((error: unknown) =>
    // The hold stays open; the reconciliation refunds it (the registration does not name it).
    log.warn('quota refund failed; the reconciler refunds the hold', { account_id: accountId, counter: reservation.counterKey, ...describeError(error) }),
  );
}
