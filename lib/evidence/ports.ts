/**
 * The ports of the evidence domain: what it needs of the ledger (LedgerPublisher), of the monthly
 * quota (QuotaPort) and of the store: the evidence items, the device chains and the ML-DSA-65 key
 * registrations (the batches: batch-store.ts; the statistics: stats.ts). The domain owns these
 * interfaces; the adapters implement them (lib/ledger, lib/store) and lib/deps plugs them in.
 */
import type { TierName } from '../accounts/tiers.js';
import type { Charge } from '../accounts/limits.js';
import type { SweepStep } from '../accounts/counter-repository.js';
import type {
  AnchorClaim,
  AnchoredEvidence,
  ChainLink,
  EvidenceItem,
  FinalLedgerReceipt,
  MerkleInclusion,
  SignedProofs,
  StandaloneProofStore,
  StoredTx,
  AnchorReceipt,
} from './records.js';

export type { SweepStep };

/** A signed ledger transaction, as the publisher announces it before it can reach any node. */
export interface SignedTx {
  txHash: string;
  nonce: number;
  /** The signed transaction, 0x hex. */
  raw: string;
  /** Lower-case address of the wallet. */
  from: string;
}

export interface LedgerReceipt {
  status: 'confirmed' | 'failed';
  blockNumber: number;
  /** The version mined (after a fee replacement, possibly another version of the same nonce). */
  txHash?: string | undefined;
  txHashes?: string[] | undefined;
}

/** What became of a transaction signed earlier (see LedgerPublisher.resume). */
export type ResumeOutcome = { outcome: 'mined'; receipt: LedgerReceipt } | { outcome: 'sent'; txHash: string } | { outcome: 'dead' };

/**
 * The ledger as the anchoring pipeline sees it (docs/state-machines.md: accept, then publish). Direct mode
 * (one transaction per anchor) is lib/ledger's sender behind this port, wired in lib/deps.
 */
export interface LedgerPublisher {
  readonly chainId: number;
  address(): Promise<string>;
  /**
   * Signs a transaction carrying `data` and hands it to `persist` BEFORE it is written to the
   * ledger's own records or broadcast; when `persist` throws, the nonce is given back, nothing goes
   * out and that error is rethrown. `persist` may be called again with a new signature (a nonce
   * given back before its record was written, and another taken); each announced transaction but
   * the last was never sent. Once recorded, the transaction keeps its nonce: `broadcast` says
   * whether the node took it now ('accepted'), may have ('ambiguous') or did not ('failed': it is
   * sent again by resume() or the ledger's re-send job, never replaced).
   */
  publish(data: Uint8Array, ref: string, persist: (tx: SignedTx) => Promise<void>): Promise<{ txHash: string; broadcast: 'accepted' | 'ambiguous' | 'failed' }>;
  /**
   * Finishes a transaction signed earlier whose sender may have died at any line: `mined` (with
   * its receipt), `sent` (it is with the node or will be re-sent from the ledger's records), or
   * `dead` (it can never be mined: its nonce went to another transaction; a new one may be signed).
   */
  resume(tx: { txHash: string; nonce: number; raw: string; ref: string }): Promise<ResumeOutcome>;
  /** The receipt, or null when it has not arrived within `timeoutMs`; with `nonce`, any version of that slot counts. */
  waitForReceipt(txHash: string, timeoutMs: number, nonce?: number): Promise<LedgerReceipt | null>;
}

/** The account's limits as anchoring uses them: a quota hold named after the anchor (lib/accounts/quota-holds.ts). */
export interface QuotaPort {
  /**
   * Charges the request: one quota unit held under `holdId` and, with `rate`, the request's rate
   * unit, in one write (a request counts one rate unit however many holds it takes).
   */
  charge(accountId: string, tier: TierName, holdId: string, rate: boolean): Promise<Charge>;
  /** Ends a hold: settle keeps the unit, refund gives it back; each hold ends once (true for the call that ended it). */
  end(hold: { counterKey: string; holdId: string }, outcome: 'settle' | 'refund'): Promise<boolean>;
}

/** Batch mode: the batch an anchor's leaf joined, and the chain and wallet it will be published with. */
export interface BatchRef {
  batch_pk: string;
  ledger_address: string;
  ledger_chain_id: number;
}

/** An account's registration of a hash: its time, whether this call made it, and the quota hold that paid for it. */
export interface Registration {
  registeredAt: string;
  first: boolean;
  hold: string;
}

/** A publish: the item as published (with its version), or the item as it stands (undefined when there is none). */
export type HashClaimResult = { ok: true; item: EvidenceItem } | { ok: false; current: EvidenceItem | undefined };

/**
 * Where the evidence items are kept (lib/store/evidence-table.ts): reads, registrations,
 * stand-alone proofs, and the transitions of EVIDENCE_ITEM (lib/state-machines.ts,
 * docs/state-machines.md). Each transition is one conditional write from the item as the caller
 * read it, conditional on that state AND version, moving the version on. It returns the item as it
 * now stands (computed, not read back), or null when the item had moved on meanwhile: the caller
 * then reads it again and decides from what it finds. Nothing ever overwrites a newer state.
 */
export interface EvidenceItemStore extends StandaloneProofStore {
  /** The item, read strongly consistent (verify must see a just-finished anchor). */
  get(imageHash: string): Promise<EvidenceItem | undefined>;
  /** Many items, read strongly consistent in batches (those that exist). */
  getMany(imageHashes: readonly string[]): Promise<EvidenceItem[]>;
  /** Unfinished anchors from the sparse index, oldest first (a hint: the scans below read the items). */
  listUnfinished(limit: number): Promise<string[]>;
  /** Every unfinished anchor, read from the items themselves (a full scan: an operator's tool). */
  scanUnfinished(): Promise<string[]>;
  /** One step of the local safety sweep: the unfinished anchors among the next `step.items` items, and whether it reached the end. */
  scanUnfinishedSegment(step: SweepStep): Promise<{ hashes: string[]; complete: boolean }>;
  /**
   * Registers a hash for an account (its own item), paid by the quota hold `holdId`; idempotent per
   * account: `first` for the request that made the registration, whose hold the item names.
   */
  register(imageHash: string, accountId: string, now: string, holdId: string): Promise<Registration | 'barred'>;
  /** Bars a registration's hold that the reconciliation is about to refund ('registered': the account's registration exists already). */
  barRegistration(imageHash: string, accountId: string, holdId: string): Promise<'barred' | 'registered'>;
  /** The account's own registration of the hash (`item`: the evidence item, for data from before per-account registrations). */
  getRegistration(imageHash: string, accountId: string, item?: EvidenceItem): Promise<Registration | undefined>;
  /** When any account first registered the hash (eventually consistent in DynamoDB), if one did. */
  firstRegistration(imageHash: string, item?: EvidenceItem): Promise<string | undefined>;

  /**
   * publish (none → publishing): the first write of an anchor claims the hash and stores every proof
   * with either the signed transaction (direct mode, BEFORE the ledger sender persists or broadcasts
   * it) or the batch its leaf joins (batch mode). Exactly one of any number of concurrent publishes
   * lands: the condition admits only an item with no anchor, whose dead_claims do not name this
   * claim. No read first; the item as it was comes back when the write fails.
   */
  publish(claim: AnchorClaim, proofs: SignedProofs, tx: StoredTx | BatchRef): Promise<HashClaimResult>;
  /**
   * bar (none → none): adds the claim to the item's dead_claims, so that its publish can never land,
   * unless an anchor is on the hash already ('anchored': no bar needed, that claim can never publish
   * either unless it is the anchor's own). 'barred' also when it was barred before.
   */
  barClaim(imageHash: string, claimId: string): Promise<'barred' | 'anchored'>;
  /** rebatch (publishing → publishing): a leaf its batch was sealed without moves to a later window. */
  moveToBatch(current: EvidenceItem, toBatch: string): Promise<EvidenceItem | null>;
  /** replace (publishing → publishing): a transaction that can never be mined is replaced, by exactly one of the resumers that found it dead. */
  replaceTx(current: EvidenceItem, tx: StoredTx): Promise<EvidenceItem | null>;
  /**
   * anchor (publishing → anchored): the transaction (or its batch's) was handed to the ledger;
   * with a receipt, its status in the same write; batch mode: the batch's transaction and the
   * inclusion proof too. The anchored item for the call that made the move; null when another did.
   */
  markAnchored(
    current: EvidenceItem,
    receipt: AnchorReceipt | null,
    batch?: { tx: Omit<StoredTx, 'tx_raw'>; merkle: MerkleInclusion },
  ): Promise<AnchoredEvidence | null>;
  /** confirm / fail (anchored:pending → confirmed | failed): the receipt of a version of the named transaction. */
  setTxStatus(
    current: EvidenceItem,
    status: 'confirmed' | 'failed',
    blockNumber: number | undefined,
    at: string,
    landed?: { txHash?: string; txHashes?: string[] },
  ): Promise<EvidenceItem | null>;
  /** follow (anchored:pending → pending): the record names a fee replacement of its transaction; `txHashes` every version, oldest first. */
  follow(current: EvidenceItem, txHash: string, txHashes: string[]): Promise<EvidenceItem | null>;
  /** finalize (anchored:confirmed → final): the finalized receipt, stored once; true for the call that stored it. */
  recordFinalLedger(current: EvidenceItem, final: FinalLedgerReceipt): Promise<boolean>;
  /** Takes an item out of the unfinished index (a stray entry); conditional on the version read. */
  clearUnfinished(current: EvidenceItem): Promise<void>;
}

/**
 * Where the device-chain links are kept (lib/store/chain-table.ts). Plain conditional writes; the
 * rules that keep a chain from forking are the domain's (EvidenceRepository.claimLink).
 */
export interface ChainLinkStore {
  lastLink(publicKeyHex: string): Promise<ChainLink | undefined>;
  getLink(publicKeyHex: string, index: number): Promise<ChainLink | undefined>;
  /** A page of a device's chain in index order. */
  listLinks(publicKeyHex: string, fromIndex: number, limit: number): Promise<ChainLink[]>;
  /** The links at index − 1, index and index + 1 that exist, read together and strongly consistent. */
  linksAround(publicKeyHex: string, index: number): Promise<Map<number, ChainLink>>;
  /** Writes a new link if its position is free (`never-claimed`: only where no link ever was); false when it is taken. */
  putLink(link: ChainLink, free?: 'never-claimed' | 'absent-or-released'): Promise<boolean>;
  /** Moves a claimed link of `link.image_hash` from the claim `wasClaimId` to `claimId`; false when it moved on. */
  moveLinkClaim(link: Pick<ChainLink, 'public_key_hex' | 'chain_index' | 'image_hash'>, claimId: string, wasClaimId: string, leaseExpiresAt: number): Promise<boolean>;
  /** Frees a link still claimed by `claimId` (marks it released); never an anchored one. */
  releaseLink(publicKeyHex: string, index: number, claimId: string): Promise<boolean>;
  /** Marks the link of `imageHash` anchored. Idempotent. */
  anchorLink(publicKeyHex: string, index: number, imageHash: string, anchoredAt: string, txHash: string): Promise<void>;
  /** Names a replacement of the link's transaction on the link of `imageHash`. */
  followTx(publicKeyHex: string, index: number, imageHash: string, txHash: string): Promise<void>;
}

/** Where a registration stands. */
export type PqRegistrationState = 'claimed' | 'sent' | 'confirmed' | 'failed';

/** The stored registration of one public key. */
export interface PqKeyRegistration {
  algorithm: 'ML-DSA-65';
  /** SHA-256 of the raw 1952-byte public key, lower-case hex: what the transaction carries. */
  fingerprint: string;
  key_id: string;
  state: PqRegistrationState;
  chain_id: number;
  created_at: string;
  /** Wallet that sent the transaction (lower case). */
  from?: string;
  tx_hash?: string;
  nonce?: number;
  sent_at?: string;
  block_number?: number;
  confirmed_at?: string;
}

/**
 * Where the registrations are kept, one per fingerprint (lib/store/pq-registration-table.ts).
 * A run claims the record under a lease before it sends; every write it makes as the claimant is
 * conditional on its claim id (lib/store/lease.ts).
 */
export interface PqRegistrationStore {
  /** The registration of `fingerprint`, read strongly consistent. */
  read(fingerprint: string): Promise<PqKeyRegistration | undefined>;
  /**
   * Claims the record (state `claimed`) for `claimId` until `expiresAt`: free when never claimed or
   * when its transaction failed; a claim whose run died (its lease lapsed before `nowMs`, no hash
   * recorded) is taken over; never while another run is sending. True when this claim landed.
   */
  claim(registration: PqKeyRegistration, claimId: string, expiresAt: number, nowMs: number): Promise<boolean>;
  /** Records the sent transaction (`sent`) and ends the claim, as its owner: the record as stored, or undefined when the claim was lost. */
  recordSent(fingerprint: string, claimId: string, sent: { txHash: string; nonce: number; from: string; sentAt: string }): Promise<PqKeyRegistration | undefined>;
  /** Records the receipt of the transaction the record names (`txHash`); nothing when it names another. */
  recordReceipt(fingerprint: string, txHash: string, receipt: { status: 'confirmed' | 'failed'; blockNumber: number; confirmedAt: string }): Promise<void>;
  /** Expires `claimId`'s claim at once (if it is still claimed by it), so that the next run may claim again. */
  releaseClaim(fingerprint: string, claimId: string): Promise<void>;
}
