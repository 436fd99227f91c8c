import { EvidenceRepository } from '../evidence/repository.js';
import { RpcReader } from '../ledger/rpc-reader.js';
import { getConfig, getDb, onDepsReset } from './core.js';

/** Light dependencies of the evidence read paths (no signing code, no ethers). */
let repo: EvidenceRepository | undefined;
let rpc: RpcReader | undefined;

export function getEvidenceRepo(): EvidenceRepository {
  repo ??= new EvidenceRepository(getDb(), { evidence: getConfig().tables.evidence, chains: getConfig().tables.chains });
  return repo;
}

export function getRpcReader(): RpcReader {
  rpc ??= new RpcReader(getConfig().ledger.rpcUrl, { timeoutMs: 5000 });
  return rpc;
}

onDepsReset(() => {
  repo = undefined;
  rpc = undefined;
});
