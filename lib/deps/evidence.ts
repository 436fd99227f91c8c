import { EvidenceRepository } from '../evidence/repository.js';
import { StatsRecorder } from '../evidence/stats.js';
import { RpcReader } from '../ledger/rpc-reader.js';
import { getConfig, getDb, onDepsReset } from './core.js';

/** Light dependencies of the evidence read paths (no signing code, no ethers). */
let repo: EvidenceRepository | undefined;
let rpc: RpcReader | undefined;
let stats: StatsRecorder | undefined;

export function getEvidenceRepo(): EvidenceRepository {
  repo ??= new EvidenceRepository(getDb(), { evidence: getConfig().tables.evidence, chains: getConfig().tables.chains }, getStats());
  return repo;
}

/** The public statistics' counters (GET /api/v1/stats and the events that feed them). */
export function getStats(): StatsRecorder {
  stats ??= new StatsRecorder(getDb(), getConfig().tables.counters);
  return stats;
}

export function getRpcReader(): RpcReader {
  rpc ??= new RpcReader(getConfig().ledger.rpcUrl, { timeoutMs: 5000 });
  return rpc;
}

onDepsReset(() => {
  repo = undefined;
  rpc = undefined;
  stats = undefined;
});
