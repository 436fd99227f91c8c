import type { StoredTx } from './records.js';

/**
 * The ledger batches as batch mode keeps them (lib/evidence/batch-publish.ts): per window of one
 * chain and wallet, one leaf per anchor that joined it and the seal, whose transitions are those
 * of BATCH_SEAL (docs/state-machines.md, "The batch seal"). The store implements this port
 * (lib/store/batch-table.ts, the `batches` table).
 */

/** A leaf as stored: the anchor's image hash and its leaf hash (SHA-256(0x00 || image_hash || server_hash)). */
export interface BatchLeaf {
  image_hash: string;
  leaf_hash: string;
}

/** The seal while its sealer works (`sealing`, under a lease) and once it stored the batch (`sealed`). */
export interface BatchSeal {
  state: 'sealing' | 'sealed';
  /** The version (lib/state-machines.ts BATCH_SEAL): every transition is conditional on it and adds one. */
  v: number;
  sealer_id: string;
  lease_expires_at: number;
  /** Sealed: the image hashes of the leaves in tree order, 32 bytes each, concatenated. */
  images?: Uint8Array;
  /** Sealed: the leaf hashes in tree order, 32 bytes each, concatenated. */
  leaves?: Uint8Array;
  root?: string;
  tree_size?: number;
  sealed_at?: string;
  tx_hash?: string;
  tx_nonce?: number;
  tx_raw?: string;
  ledger_address?: string;
  ledger_chain_id?: number;
}

/** What the sealer stores with the move to `sealed`, before the transaction can reach a node. */
export interface SealContents {
  images: Uint8Array;
  leaves: Uint8Array;
  root: string;
  tree_size: number;
  sealed_at: string;
}

/**
 * Where the batches are kept. The seal's transitions are each one conditional write from the seal
 * as the caller read it (state and version `v`), moving the version on; each returns the seal as
 * it now stands, or null when it had moved on: the caller reads it again.
 */
export interface BatchStore {
  /** Writes (or writes again: idempotent) an anchor's leaf into a batch. */
  putLeaf(pk: string, leaf: BatchLeaf, nowMs: number): Promise<void>;
  /** Writes (or writes again) many leaves of one batch, in as few requests as the store allows. */
  putLeaves(pk: string, leaves: readonly BatchLeaf[], nowMs: number): Promise<void>;
  /** Every leaf of a batch, in image-hash order, read strongly consistent. */
  listLeaves(pk: string): Promise<BatchLeaf[]>;
  /** The seal of a batch, read strongly consistent (undefined: nobody holds a claim on it). */
  getSeal(pk: string): Promise<BatchSeal | undefined>;
  /** claim (none → sealing) under a lease: exactly one of any number of concurrent claims wins; no read first. */
  claimSeal(pk: string, sealerId: string, leaseExpiresAt: number): Promise<BatchSeal | null>;
  /** takeOver (sealing → sealing): the claim of a sealer whose lease lapsed before `nowMs` (it died, or hangs). */
  takeOverSeal(pk: string, current: BatchSeal, sealerId: string, leaseExpiresAt: number, nowMs: number): Promise<BatchSeal | null>;
  /** abandon (sealing → none): the sealer gives its claim back when nothing was stored under it. */
  abandonSeal(pk: string, current: BatchSeal): Promise<void>;
  /**
   * seal (sealing → sealed): the leaf list, the root and the signed transaction, stored BEFORE the
   * transaction can reach a node, only by the sealer that holds the claim as it read it.
   */
  markSealed(pk: string, current: BatchSeal, contents: SealContents, tx: StoredTx): Promise<BatchSeal | null>;
  /** replace (sealed → sealed): a transaction that can never be mined is replaced (same root), by one of the resumers that found it dead. */
  replaceSealTx(pk: string, current: BatchSeal, tx: StoredTx): Promise<BatchSeal | null>;
}
