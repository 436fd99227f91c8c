import type { ActivityRepository } from '../accounts/activity-repository.js';
import { ActivityTable } from '../store/activity-table.js';
import { getConfig, getDb } from './core.js';
import { lazy } from './lazy.js';

/** The account activity list (dashboard "Recent evidence"): noted by the evidence functions, read by GET /api/v2/account/evidence. */
export const getActivityRepo: () => ActivityRepository = /* @__PURE__ */ lazy(() => new ActivityTable(getDb(), getConfig().tables.activity));
