import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { anchorLeafHash, hashLeaf, MerkleTree, rootFromInclusionProof, verifyInclusion } from '../../lib/evidence/merkle.js';

/**
 * The batch tree against RFC 6962's published reference values (the Merkle tree heads of the
 * certificate-transparency test suite over the same eight inputs) and against an independent
 * recomputation written differently: bottom-up, level by level, where a lone last node is carried
 * up unchanged (no duplication), which yields the same tree as RFC 6962's split at the largest
 * power of two. The module under test recurses top-down with memoised subtrees.
 */

const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** Independent: every level of the tree, leaves first, computed bottom-up. */
function levels(leafHashes: Buffer[]): Buffer[][] {
  const out: Buffer[][] = [leafHashes];
  while ((out.at(-1) as Buffer[]).length > 1) {
    const below = out.at(-1) as Buffer[];
    const above: Buffer[] = [];
    for (let i = 0; i < below.length; i += 2) {
      const right = below[i + 1];
      above.push(right ? sha256(Buffer.from([1]), below[i] as Buffer, right) : (below[i] as Buffer));
    }
    out.push(above);
  }
  return out;
}

/** Independent: the audit path of leaf `index`, read off the levels (a carried-up node has no sibling at that level). */
function independentPath(leafHashes: Buffer[], index: number): Buffer[] {
  const path: Buffer[] = [];
  let i = index;
  for (const level of levels(leafHashes).slice(0, -1)) {
    const sibling = level[i ^ 1];
    if (sibling) path.push(sibling);
    i >>= 1;
  }
  return path;
}

const leavesOf = (n: number) => Array.from({ length: n }, (_, i) => sha256(Buffer.from([0]), Buffer.from(`leaf ${i}`)));

describe('the batch Merkle tree (RFC 6962)', () => {
  it('gives the certificate-transparency reference roots for 1 to 8 leaves', () => {
    // RFC 6962 reference inputs and tree heads (certificate-transparency merkle_tree tests).
    const inputs = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'];
    const roots = [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
      'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
      '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
      '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
      'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
      '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
    ];
    for (let n = 1; n <= 8; n++) {
      const tree = new MerkleTree(inputs.slice(0, n).map((h) => hashLeaf(Buffer.from(h, 'hex'))));
      assert.equal(tree.root().toString('hex'), roots[n - 1], `root of ${n} leaves`);
    }
  });

  it('hashes an anchor leaf as SHA-256(0x00 || image_hash || server_hash)', () => {
    const image = 'ab'.repeat(32);
    const server = 'cd'.repeat(32);
    assert.deepEqual(anchorLeafHash(image, server), sha256(Buffer.from([0]), Buffer.from(image, 'hex'), Buffer.from(server, 'hex')));
    assert.throws(() => anchorLeafHash('ab', server), TypeError);
  });

  for (const n of [1, 2, 3, 5, 9, 17, 33, 65]) {
    it(`matches the independent recomputation for ${n} leaves: root, and every inclusion path`, () => {
      const leaves = leavesOf(n);
      const tree = new MerkleTree(leaves);
      const expectedRoot = (levels(leaves).at(-1) as Buffer[])[0] as Buffer;
      assert.equal(tree.root().toString('hex'), expectedRoot.toString('hex'));
      for (let i = 0; i < n; i++) {
        const path = tree.path(i);
        assert.deepEqual(path.map((p) => p.toString('hex')), independentPath(leaves, i).map((p) => p.toString('hex')), `path of leaf ${i}`);
        assert.ok(verifyInclusion(leaves[i] as Buffer, i, n, path, expectedRoot), `leaf ${i} verifies`);
      }
    });
  }

  it('a single leaf is its own root with an empty path', () => {
    const [leaf] = leavesOf(1) as [Buffer];
    assert.deepEqual(new MerkleTree([leaf]).path(0), []);
    assert.ok(verifyInclusion(leaf, 0, 1, [], leaf));
  });

  it('fails for a flipped bit in any path element, in the leaf or in the root, and for a wrong index or size', () => {
    const leaves = leavesOf(9);
    const tree = new MerkleTree(leaves);
    const root = tree.root();
    for (let i = 0; i < 9; i++) {
      const path = tree.path(i);
      for (let j = 0; j < path.length; j++) {
        const bad = path.map((p) => Buffer.from(p));
        const flipped = bad[j] as Buffer;
        flipped.writeUInt8(flipped.readUInt8(31) ^ 0x01, 31);
        assert.equal(verifyInclusion(leaves[i] as Buffer, i, 9, bad, root), false, `leaf ${i}, path element ${j} flipped`);
      }
      const leaf = Buffer.from(leaves[i] as Buffer);
      leaf.writeUInt8(leaf.readUInt8(0) ^ 0x80, 0);
      assert.equal(verifyInclusion(leaf, i, 9, path, root), false);
      const otherRoot = Buffer.from(root);
      otherRoot.writeUInt8(otherRoot.readUInt8(5) ^ 0x04, 5);
      assert.equal(verifyInclusion(leaves[i] as Buffer, i, 9, path, otherRoot), false);
      assert.equal(verifyInclusion(leaves[i] as Buffer, (i + 1) % 9, 9, path, root), false, 'another index');
    }
    const path = tree.path(8);
    assert.equal(verifyInclusion(leaves[8] as Buffer, 8, 10, path, root), false, 'another size');
    assert.equal(rootFromInclusionProof(leaves[8] as Buffer, 9, 9, path), null, 'index outside the tree');
    assert.equal(rootFromInclusionProof(leaves[8] as Buffer, 8, 9, [...path, root]), null, 'a path too long');
    assert.equal(rootFromInclusionProof(leaves[8] as Buffer, 8, 9, path.slice(1)), null, 'a path too short');
  });

  it('refuses an empty tree and an index outside it', () => {
    assert.throws(() => new MerkleTree([]), RangeError);
    assert.throws(() => new MerkleTree(leavesOf(3)).path(3), RangeError);
  });
});
