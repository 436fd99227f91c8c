import { createHash } from 'node:crypto';

/**
 * The Merkle tree of a ledger batch (decisions.md "Ledger batching"), written from RFC 6962 §2.1
 * (the Merkle Tree Hash and audit paths) and RFC 9162 §2.1.3.2 (verifying an inclusion proof).
 * Pure, node:crypto only: the offline verifier loads it.
 *
 *   leaf hash  MTH({d0}) = SHA-256(0x00 || d0)
 *   node hash  MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])), k the largest power of two < n
 *
 * The anchor's leaf data is image_hash || server_hash (64 bytes), so its leaf hash is
 * SHA-256(0x00 || image_hash || server_hash). The 0x00 / 0x01 prefixes keep a leaf from ever being
 * read as an inner node (second-preimage resistance, RFC 6962 §2.1).
 */

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** SHA-256(0x00 || data): the hash of one leaf's data. */
export function hashLeaf(data: Uint8Array): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(data).digest();
}

/** SHA-256(0x01 || left || right): an inner node. */
export function hashChildren(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
}

/** The leaf hash of an anchor: SHA-256(0x00 || image_hash || server_hash), both 32 bytes (hex in, bytes out). */
export function anchorLeafHash(imageHash: string, serverHash: string): Buffer {
  if (!/^[0-9a-fA-F]{64}$/.test(imageHash) || !/^[0-9a-fA-F]{64}$/.test(serverHash)) throw new TypeError('image_hash and server_hash must be 64 hex characters');
  return hashLeaf(Buffer.concat([Buffer.from(imageHash, 'hex'), Buffer.from(serverHash, 'hex')]));
}

/** The largest power of two strictly smaller than n (n ≥ 2): where RFC 6962 splits a tree of n leaves. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * A tree over leaf hashes (already hashed with {@link hashLeaf}). The hash of every subtree the
 * RFC 6962 recursion visits is computed once (2n − 1 hashes), so that the root and every
 * inclusion path of a batch cost O(n) together, not O(n) per path.
 */
export class MerkleTree {
  private readonly leaves: Buffer[];
  /** Subtree hashes keyed by `start:size`. */
  private readonly memo = new Map<string, Buffer>();

  constructor(leafHashes: readonly Uint8Array[]) {
    if (leafHashes.length === 0) throw new RangeError('a batch tree has at least one leaf');
    for (const h of leafHashes) if (h.length !== 32) throw new TypeError('leaf hashes are 32 bytes');
    this.leaves = leafHashes.map((h) => Buffer.from(h));
  }

  get size(): number {
    return this.leaves.length;
  }

  /** MTH(D[n]) (RFC 6962 §2.1). */
  root(): Buffer {
    return this.subtree(0, this.leaves.length);
  }

  /**
   * PATH(m, D[n]) (RFC 6962 §2.1.1): the sibling hashes from the leaf up to the root, nearest first.
   * PATH(0, {d0}) = {}; for n > 1 and k the split point: m < k → PATH(m, D[0:k]) : MTH(D[k:n]);
   * m ≥ k → PATH(m − k, D[k:n]) : MTH(D[0:k]).
   */
  path(index: number): Buffer[] {
    if (!Number.isInteger(index) || index < 0 || index >= this.leaves.length) throw new RangeError(`leaf index ${index} is outside a tree of ${this.leaves.length}`);
    const out: Buffer[] = [];
    this.collectPath(index, 0, this.leaves.length, out);
    return out;
  }

  private collectPath(m: number, start: number, n: number, out: Buffer[]): void {
    if (n === 1) return;
    const k = splitPoint(n);
    if (m < k) {
      this.collectPath(m, start, k, out);
      out.push(this.subtree(start + k, n - k));
    } else {
      this.collectPath(m - k, start + k, n - k, out);
      out.push(this.subtree(start, k));
    }
  }

  private subtree(start: number, n: number): Buffer {
    if (n === 1) return this.leaves[start] as Buffer;
    const key = `${start}:${n}`;
    const known = this.memo.get(key);
    if (known) return known;
    const k = splitPoint(n);
    const hash = hashChildren(this.subtree(start, k), this.subtree(start + k, n - k));
    this.memo.set(key, hash);
    return hash;
  }
}

/**
 * The root an inclusion proof leads to (RFC 9162 §2.1.3.2), or null when the proof cannot belong
 * to a tree of `treeSize` leaves at `leafIndex` (wrong length, index out of range). The verifier
 * compares the result with the root it trusts (here: the one in the ledger transaction).
 */
export function rootFromInclusionProof(leafHash: Uint8Array, leafIndex: number, treeSize: number, path: readonly Uint8Array[]): Buffer | null {
  if (!Number.isSafeInteger(leafIndex) || !Number.isSafeInteger(treeSize) || leafIndex < 0 || leafIndex >= treeSize) return null;
  if (leafHash.length !== 32 || path.some((p) => p.length !== 32)) return null;
  // fn, sn as in the RFC; BigInt keeps the shifts exact past 2^31.
  let fn = BigInt(leafIndex);
  let sn = BigInt(treeSize - 1);
  let r: Buffer = Buffer.from(leafHash);
  for (const p of path) {
    if (sn === 0n) return null;
    if ((fn & 1n) === 1n || fn === sn) {
      r = hashChildren(p, r);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      r = hashChildren(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  return sn === 0n ? r : null;
}

/** Whether `path` proves that `leafHash` is leaf `leafIndex` of the tree of `treeSize` leaves with root `root`. */
export function verifyInclusion(leafHash: Uint8Array, leafIndex: number, treeSize: number, path: readonly Uint8Array[], root: Uint8Array): boolean {
  const computed = rootFromInclusionProof(leafHash, leafIndex, treeSize, path);
  return computed !== null && root.length === 32 && computed.equals(Buffer.from(root));
}
