import { readFile } from 'node:fs/promises';
import { Wallet } from 'ethers';
import { LocalMlDsaSigner } from '../crypto/ml-dsa.js';
import { KmsMlDsaSigner } from '../crypto/ml-dsa-kms.js';
import type { IssuedTimestamp, PqSigner, TimestampAuthority } from '../crypto/ports.js';
import { EmbeddedTsa, type EmbeddedTsaOptions } from '../crypto/tsa/embedded.js';
import { KmsMlDsaTsaKeySigner, KmsTsaKeySigner } from '../crypto/tsa/key-signer.js';
import { RemoteTsa } from '../crypto/tsa/remote.js';
import { reconcileQuotaHolds } from '../accounts/quota-holds.js';
import type { LimitService } from '../accounts/limits.js';
import type { AnchorDeps } from '../evidence/anchor.js';
import type { BatchStore } from '../evidence/batch-store.js';
import type { PqRegistrationDeps } from '../evidence/pq-registration.js';
import type { ReconcileDeps } from '../evidence/reconcile.js';
import type { TimestampAuthorities } from '../evidence/timestamp.js';
import { pqTsaFiles, tsaFiles } from '../crypto/tsa/files.js';
import { encodeAnchorData } from '../ledger/anchor-data.js';
import { KmsLedgerSigner } from '../ledger/kms-signer.js';
import { createLedgerProvider, LedgerSender } from '../ledger/sender.js';
import { log } from '../log.js';
import { BatchTable } from '../store/batch-table.js';
import { assertNotRetired, getKeyRegistry } from './key-registry.js';
import { getConfig, getDb } from './core.js';
import { getEvidenceRepo, getPqRegistrations, getRpcReader, getStats } from './evidence.js';
import { getKeyAuthDeps } from './key-auth.js';
import { getKmsClient } from './kms.js';
import { lazy } from './lazy.js';
import { watchPort } from './port-hooks.js';

/**
 * The anchoring part of the composition root: the ML-DSA-65 signer, the time-stamping authority
 * and the ledger sender, each chosen by its configured scheme. Built once per process on first use
 * (lib/deps/lazy.ts); only the functions that anchor, time-stamp or register the key import this module.
 */
export const getSigner: () => Promise<PqSigner> = /* @__PURE__ */ lazy(async () => {
  const { signer: cfg } = getConfig();
  const signer =
    cfg.scheme === 'kms'
      ? await KmsMlDsaSigner.connect(getKmsClient(), cfg.kmsKeyId ?? '')
      : LocalMlDsaSigner.fromSeed(Buffer.from(await localSeedHex(), 'hex'));
  // A key the registry retired never signs again (decisions.md "Key validity windows").
  await assertNotRetired('ml-dsa-65', signer.keyId);
  return signer;
});

export const getTsa: () => Promise<TimestampAuthority> = /* @__PURE__ */ lazy(async () => {
  const config = getConfig();
  if (config.tsa.scheme === 'remote') {
    return new RemoteTsa({
      url: config.tsa.url ?? '',
      rootsPem: [await readFile(config.tsa.rootsFile ?? '', 'utf8')],
      policyOid: config.tsa.policyOid,
      timeoutMs: config.tsa.timeoutMs,
    });
  }
  if (config.tsa.kmsKeyId) {
    // Production: the key stays in KMS (ECC_NIST_P256); its certificate chain ships with the functions.
    const [rootCertPem, tsaCertPem] = await Promise.all([
      readFile(config.tsa.rootFile ?? '', 'utf8'),
      readFile(config.tsa.certFile ?? '', 'utf8'),
    ]);
    const keySigner = new KmsTsaKeySigner(getKmsClient(), config.tsa.kmsKeyId);
    return EmbeddedTsa.create({ rootCertPem, tsaCertPem, keySigner, policyOid: config.tsa.policyOid });
  }
  // create() checks the chain, the EKU and that key and certificate belong together.
  return EmbeddedTsa.create(await localTsaKeys(tsaFiles(config.tsa.dir), config.tsa.policyOid));
});

/** A local embedded TSA's key material: its PEM files in DATA_DIR/tsa, read. */
async function localTsaKeys(files: { rootCert: string; tsaCert: string; tsaKey: string }, policyOid: string): Promise<LocalTsaKeys> {
  const [rootCertPem, tsaCertPem, tsaKeyPkcs8Pem] = await Promise.all([readFile(files.rootCert, 'utf8'), readFile(files.tsaCert, 'utf8'), readFile(files.tsaKey, 'utf8')]);
  return { rootCertPem, tsaCertPem, tsaKeyPkcs8Pem, policyOid };
}

/** The local ML-DSA-65 seed (hex): SIGNER_SEED_HEX or the seed file in DATA_DIR. */
async function localSeedHex(): Promise<string> {
  const { signer } = getConfig();
  return signer.seedHex ?? (await readFile(signer.seedFile, 'utf8')).trim();
}

/**
 * The post-quantum TSA (ML-DSA-65 tokens, RFC 9882), or undefined when it is off (config
 * `tsa.pq`): locally the seeds in DATA_DIR/tsa, in production a KMS key of key spec ML_DSA_65
 * (ML_DSA_SHAKE_256, RAW, as the service's ML-DSA key; every signature verified with the leaf's
 * key before the token is issued) with its certificate and root shipped with the functions.
 */
export const getPqTsa: () => Promise<EmbeddedTsa | undefined> = /* @__PURE__ */ lazy(async () => {
  const { tsa } = getConfig();
  const pq = tsa.pq;
  if (!pq) return undefined;
  if (pq.kmsKeyId) {
    const [rootCertPem, tsaCertPem] = await Promise.all([readFile(pq.rootFile ?? '', 'utf8'), readFile(pq.certFile ?? '', 'utf8')]);
    // create() signs a challenge with the KMS key and verifies it with the certificate's key.
    return EmbeddedTsa.create({ rootCertPem, tsaCertPem, keySigner: new KmsMlDsaTsaKeySigner(getKmsClient(), pq.kmsKeyId), policyOid: pq.policyOid });
  }
  return EmbeddedTsa.create(await localTsaKeys(pqTsaFiles(tsa.dir), pq.policyOid));
});

/** The local keys, all of them, as a proof service outside the event loop needs them (never logged). */
export interface LocalProofKeys {
  signerSeedHex: string;
  tsa: LocalTsaKeys;
  pqTsa?: LocalTsaKeys;
}

/** A local embedded TSA: its PEM files' contents and policy. */
export type LocalTsaKeys = Required<Pick<EmbeddedTsaOptions, 'rootCertPem' | 'tsaCertPem' | 'tsaKeyPkcs8Pem' | 'policyOid'>>;

/**
 * What makes the proofs in place of the process's own adapters (`npm start`'s worker threads,
 * lib/local/proof-threads.ts): the same signer and TSAs, their key operations elsewhere.
 */
export interface ProofService {
  signer(local: PqSigner): PqSigner;
  tsa(local: TimestampAuthority): TimestampAuthority;
  /** A post-quantum token without its certificates (certReq false). */
  pqTimestamp(imprint: Uint8Array): Promise<IssuedTimestamp>;
}

let proofService: ProofService | undefined;

/** `npm start` hands its proof threads to the anchors it serves (lib/local/stack.ts); undefined gives them back to the event loop. */
export function useProofService(service: ProofService | undefined): void {
  proofService = service;
}

/**
 * The local keys, or undefined when one is not local (a KMS key, a remote TSA: their proofs are
 * calls that wait, not CPU): what a proof service is built from (docs/decisions.md "Batch anchoring").
 */
export async function localProofKeys(): Promise<{ keys: LocalProofKeys; keyId: string } | undefined> {
  const config = getConfig();
  const pq = config.tsa.pq;
  if (config.signer.scheme !== 'local' || config.tsa.scheme === 'remote' || config.tsa.kmsKeyId || pq?.kmsKeyId) return undefined;
  const [signerSeedHex, tsa, pqTsa] = await Promise.all([
    localSeedHex(),
    localTsaKeys(tsaFiles(config.tsa.dir), config.tsa.policyOid),
    pq ? localTsaKeys(pqTsaFiles(config.tsa.dir), pq.policyOid) : undefined,
  ]);
  // The key id from the seed itself: the signer the anchors use (getSigner) also checks the key
  // registry, which is not read here (a start reads it once its rotations are done).
  const keyId = LocalMlDsaSigner.fromSeed(Buffer.from(signerSeedHex, 'hex')).keyId;
  return { keys: { signerSeedHex, tsa, ...(pqTsa ? { pqTsa } : {}) }, keyId };
}

/**
 * The TSAs a stand-alone timestamp request chooses from by policy OID (POST
 * /api/v2/evidence/timestamp): the classic one, and the post-quantum one while it is on.
 */
export function getTimestampAuthorities(): TimestampAuthorities {
  const { tsa } = getConfig();
  const pq = tsa.pq;
  return {
    classic: { policyOid: tsa.policyOid, get: getTsa },
    ...(pq
      ? {
          pq: {
            policyOid: pq.policyOid,
            get: async () => {
              const authority = await getPqTsa();
              if (!authority) throw new Error('the post-quantum TSA is off');
              return authority;
            },
          },
        }
      : {}),
  };
}

export const getLedgerSender: () => Promise<LedgerSender> = /* @__PURE__ */ lazy(async () => {
  const config = getConfig();
  const { ledger } = config;
  const provider = ledgerProvider();
  let wallet: KmsLedgerSigner | Wallet;
  if (ledger.walletScheme === 'kms') {
    wallet = new KmsLedgerSigner(getKmsClient(), ledger.walletKmsKeyId ?? '', provider);
  } else {
    const key = ledger.walletPrivateKey ?? (await readFile(ledger.walletKeyFile, 'utf8')).trim();
    wallet = new Wallet(key.startsWith('0x') ? key : `0x${key}`, provider);
  }
  // A retired wallet never sends again (its window ended; docs/runbook.md "Rotating keys"). Asked
  // only when the registry retired some wallet, so that a KMS wallet costs no GetPublicKey otherwise.
  if ((await getKeyRegistry()).keys.some((k) => k.kind === 'ledger-wallet' && k.retired_at !== null)) await assertNotRetired('ledger-wallet', await wallet.getAddress());
  return ledgerSenderFor(wallet);
});

/** The provider of the configured ledger node (one per process). */
const ledgerProvider = /* @__PURE__ */ lazy(() => {
  const { ledger } = getConfig();
  return watchPort('ledger', createLedgerProvider({ rpcUrl: ledger.rpcUrl, chainId: ledger.chainId, pollingIntervalMs: ledger.pollingIntervalMs }));
});

/**
 * A sender for a local wallet key other than the configured one: the wallet a local rotation
 * replaces, which funds its successor (lib/local/wallet-rotation.ts). Same table, node and fees.
 */
export function ledgerSenderForKey(privateKey: string): LedgerSender {
  return ledgerSenderFor(new Wallet(privateKey.startsWith('0x') ? privateKey : `0x${privateKey}`, ledgerProvider()));
}

function ledgerSenderFor(wallet: KmsLedgerSigner | Wallet): LedgerSender {
  const config = getConfig();
  const { ledger } = config;
  return new LedgerSender({
    provider: ledgerProvider(),
    signer: wallet,
    db: getDb(),
    table: config.tables.ledger,
    chainId: ledger.chainId,
    priorityFeeGwei: ledger.priorityFeeGwei,
    maxFeeGwei: ledger.maxFeeGwei,
    pollingIntervalMs: ledger.pollingIntervalMs,
    confirmationTag: ledger.confirmationTag,
    lowBalanceWei: ledger.lowBalanceWei,
    replaceAfterMs: ledger.replaceAfterMinutes > 0 ? ledger.replaceAfterMinutes * 60_000 : undefined,
    // The evidence item names its transaction: it follows a replacement of a stuck one.
    // (pq-key registrations do not yet; their receipt is looked up by the hash they name.)
    onReplaced: async (r) => {
      if (r.kind === 'anchor') await getEvidenceRepo().replaceTxHash(r.ref, r.previousTxHash, r.txHash, r.txHashes);
    },
    log: (level, message, fields) => log[level](message, fields),
  });
}

/** The ledger batches (one per process: its waiters share their reads of a batch's seal). */
export const getBatchStore: () => BatchStore = /* @__PURE__ */ lazy(() => new BatchTable(getDb(), getConfig().tables.batches));

/**
 * Everything anchorEvidence needs: the ledger sender behind the LedgerPublisher port, one
 * transaction per anchor (direct mode) or per window of LEDGER_BATCH_WINDOW_MS (batch mode).
 */
export async function getAnchorDeps(): Promise<AnchorDeps> {
  const config = getConfig();
  const [pq, authority, sender, pqTsa] = await Promise.all([getSigner(), getTsa(), getLedgerSender(), getPqTsa()]);
  const threads = proofService;
  const { limits } = getKeyAuthDeps();
  return {
    repo: getEvidenceRepo(),
    signer: threads ? threads.signer(pq) : pq,
    tsa: threads ? threads.tsa(authority) : authority,
    // The post-quantum token leaves its certificates out (certReq false: 4 KB instead of 15 KB);
    // the record keeps them once per chain (tsa_pq_certificates, a shared blob) and the receipt
    // carries them, as it does the classic chain.
    ...(pqTsa
      ? {
          pqTsa: {
            scheme: 'embedded' as const,
            timestamp: (imprint: Uint8Array) => (threads ? threads.pqTimestamp(imprint) : pqTsa.issue({ imprint, certReq: false })),
            certificates: () => pqTsa.certificates(),
          },
        }
      : {}),
    ledger: {
      chainId: config.ledger.chainId,
      address: () => sender.address(),
      publish: async (data, ref, persist) => {
        const r = await sender.submit(data, { kind: 'anchor', ref }, { beforePersist: persist });
        return { txHash: r.txHash, broadcast: r.broadcast };
      },
      resume: (tx) => sender.resume({ ...tx, kind: 'anchor' }),
      waitForReceipt: (txHash, timeoutMs, nonce) => sender.waitForReceipt(txHash, timeoutMs, nonce),
    },
    quota: quotaPort(limits),
    encodeAnchorData: (imageHash, serverHash) => Buffer.from(encodeAnchorData(imageHash, serverHash).slice(2), 'hex'),
    receiptTimeoutMs: config.ledger.receiptTimeoutMs,
    batching: { store: getBatchStore(), windowMs: config.ledger.batchWindowMs },
    finality: { rpc: getRpcReader(), confirmationTag: config.ledger.confirmationTag },
  };
}

/** The account meter as the anchor uses it (a settle rides on a later charge: LimitService). */
export function quotaPort(limits: LimitService): AnchorDeps['quota'] {
  return {
    charge: (accountId, tier, holdId, rate) => limits.charge(accountId, tier, holdId, { rate }),
    end: async (hold, outcome) => {
      if (outcome === 'refund') return limits.endHold(hold.counterKey, hold.holdId, 'refund');
      limits.settleQuota({ ...hold, allowed: true });
      return true;
    },
  };
}

/** What the reconciler needs: the anchoring dependencies, the ledger's re-send job and the quota holds. */
export async function getReconcileDeps(): Promise<ReconcileDeps> {
  const [anchor, sender] = await Promise.all([getAnchorDeps(), getLedgerSender()]);
  const { limits } = getKeyAuthDeps();
  return {
    ...anchor,
    rebroadcast: () => sender.rebroadcastPending(),
    reconcileHolds: (judge, sweep, nowMs) => reconcileQuotaHolds(limits, judge, { nowMs, requestMaxMs: REQUEST_MAX_MS, sweep }),
  };
}

/** No API request runs longer than this (API Gateway ends them at 29 s): an older open hold is abandoned. */
const REQUEST_MAX_MS = 120_000;

/** What registering the ML-DSA-65 public key on the ledger needs (npm start, npm run admin -- register-pq-key). */
export async function getPqRegistrationDeps(): Promise<PqRegistrationDeps> {
  const config = getConfig();
  const [signer, sender] = await Promise.all([getSigner(), getLedgerSender()]);
  return {
    store: getPqRegistrations(),
    signer,
    ledger: {
      chainId: config.ledger.chainId,
      address: () => sender.address(),
      submit: (data, meta) => sender.submit(data, meta),
      waitForReceipt: (txHash, timeoutMs) => sender.waitForReceipt(txHash, timeoutMs),
      listSlots: (fromNonce) => sender.listSlots(fromNonce),
    },
    receiptTimeoutMs: config.ledger.receiptTimeoutMs,
    stats: getStats(),
  };
}
