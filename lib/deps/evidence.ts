import { EvidenceRepository } from '../evidence/repository.js';
import { StatsRecorder } from '../evidence/stats.js';
import { RpcReader } from '../ledger/rpc-reader.js';
import { getConfig, getDb } from './core.js';
import { lazy } from './lazy.js';

/** Light dependencies of the evidence read paths (no signing code, no ethers). */

/** The public statistics' counters (GET /api/v1/stats and the events that feed them). */
export const getStats: () => StatsRecorder = /* @__PURE__ */ lazy(() => new StatsRecorder(getDb(), getConfig().tables.counters));

export const getEvidenceRepo: () => EvidenceRepository = /* @__PURE__ */ lazy(
  () => new EvidenceRepository(getDb(), { evidence: getConfig().tables.evidence, chains: getConfig().tables.chains }, getStats()),
);

export const getRpcReader: () => RpcReader = /* @__PURE__ */ lazy(() => new RpcReader(getConfig().ledger.rpcUrl, { timeoutMs: 5000 }));
