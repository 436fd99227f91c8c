import type { ActivityRepository } from '../evidence/activity.js';
import { ActivityIndex } from '../store/activity-index.js';
import { getConfig, getDb } from './core.js';
import { lazy } from './lazy.js';

/** An account's recent evidence, over the evidence table's by_account index (the account endpoint loads only this). */
export const getActivityRepo: () => ActivityRepository = /* @__PURE__ */ lazy(() => new ActivityIndex(getDb(), getConfig().tables.evidence));
