import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { EvidenceRepository } from '../evidence/repository.js';
import { RpcReader } from '../ledger/rpc-reader.js';
import { ChainTable } from '../store/chain-table.js';
import { EvidenceTable } from '../store/evidence-table.js';
import { PqRegistrationTable } from '../store/pq-registration-table.js';
import { StatsRecorder } from '../store/stats-counters.js';
import { getConfig, getDb } from './core.js';
import { lazy } from './lazy.js';

/** Light dependencies of the evidence read paths (no signing code, no ethers). */

/** The public statistics' counters (GET /api/v1/stats and the events that feed them). */
export const getStats: () => StatsRecorder = /* @__PURE__ */ lazy(() => new StatsRecorder(getDb(), getConfig().tables.counters));

/** The evidence items and device chains over their tables (lib/store). */
export function createEvidenceRepository(db: DynamoDBDocumentClient, tables: { evidence: string; chains: string }): EvidenceRepository {
  return new EvidenceRepository(new EvidenceTable(db, tables.evidence), new ChainTable(db, tables.chains));
}

export const getEvidenceRepo: () => EvidenceRepository = /* @__PURE__ */ lazy(() => createEvidenceRepository(getDb(), getConfig().tables));

/** The ML-DSA-65 key registrations (in the ledger table): read by GET /api/v1/pq/registration, written by the registration. */
export const getPqRegistrations: () => PqRegistrationTable = /* @__PURE__ */ lazy(() => new PqRegistrationTable(getDb(), getConfig().tables.ledger));

export const getRpcReader: () => RpcReader = /* @__PURE__ */ lazy(() => new RpcReader(getConfig().ledger.rpcUrl, { timeoutMs: 5000 }));
