/**
 * RFC 4998 Evidence Record Syntax (ERS): the DER structures, hash trees and reduced hash trees,
 * written from the RFC (§3 EvidenceRecord, §4 ArchiveTimeStamp, §5 chains and renewal).
 *
 *   EvidenceRecord ::= SEQUENCE {
 *     version                   INTEGER { v1(1) },
 *     digestAlgorithms          SEQUENCE OF AlgorithmIdentifier,
 *     cryptoInfos               [0] CryptoInfos OPTIONAL,          -- never written
 *     encryptionInfo            [1] EncryptionInfo OPTIONAL,       -- never written
 *     archiveTimeStampSequence  ArchiveTimeStampSequence }
 *   ArchiveTimeStampSequence ::= SEQUENCE OF ArchiveTimeStampChain
 *   ArchiveTimeStampChain    ::= SEQUENCE OF ArchiveTimeStamp
 *   ArchiveTimeStamp ::= SEQUENCE {
 *     digestAlgorithm [0] AlgorithmIdentifier OPTIONAL,
 *     attributes      [1] Attributes OPTIONAL,                     -- never written
 *     reducedHashtree [2] SEQUENCE OF PartialHashtree OPTIONAL,
 *     timeStamp       ContentInfo }                                -- an RFC 3161 TimeStampToken
 *   PartialHashtree ::= SEQUENCE OF OCTET STRING
 *
 * The module is IMPLICIT TAGS (RFC 4998 Appendix A): [0] and [2] replace the SEQUENCE tag.
 *
 * Hash trees (§4.2): the leaves are sorted (binary ascending) and paired; a parent is the hash of
 * its two children concatenated in binary ascending order; an odd node at the end of a level
 * moves up unchanged. A leaf may be a group of hashes (a data object group, or the timestamps a
 * renewal covers): its node is the hash of the group's values sorted and concatenated, or the
 * value itself when the group has one. The reduced hash tree of a leaf is its group's values
 * (the first PartialHashtree), then the sibling of each level that has one, one value per list:
 * the RFC's §4.3 walk (add the running hash to the next list, sort, hash) then gives the root.
 *
 * Encoding uses asn1js; the timestamp tokens are embedded byte for byte (asn1js RawData), since
 * later archive timestamps hash them.
 */
import { createHash, type Hash } from 'node:crypto';
import * as asn1js from 'asn1js';

/** The hash algorithms a record may use (FIPS 180-4, FIPS 202). */
export type ErsHash = 'SHA-256' | 'SHA-384' | 'SHA-512' | 'SHA3-256' | 'SHA3-512';

export const ERS_HASH_OIDS: Readonly<Record<ErsHash, string>> = {
  'SHA-256': '2.16.840.1.101.3.4.2.1',
  'SHA-384': '2.16.840.1.101.3.4.2.2',
  'SHA-512': '2.16.840.1.101.3.4.2.3',
  'SHA3-256': '2.16.840.1.101.3.4.2.8',
  'SHA3-512': '2.16.840.1.101.3.4.2.10',
};

const NODE_NAMES: Readonly<Record<ErsHash, string>> = {
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
  'SHA3-256': 'sha3-256',
  'SHA3-512': 'sha3-512',
};

export function isErsHash(name: string): name is ErsHash {
  return Object.hasOwn(ERS_HASH_OIDS, name);
}

export function ersHashByOid(oid: string): ErsHash | undefined {
  return (Object.keys(ERS_HASH_OIDS) as ErsHash[]).find((k) => ERS_HASH_OIDS[k] === oid);
}

/** A node:crypto hash of the algorithm, to feed in parts (a file read in chunks). */
export function ersHasher(alg: ErsHash): Hash {
  return createHash(NODE_NAMES[alg]);
}

/** The digest of the concatenation of `parts`. */
export function ersDigest(alg: ErsHash, ...parts: Uint8Array[]): Uint8Array {
  const h = ersHasher(alg);
  for (const p of parts) h.update(p);
  return Uint8Array.from(h.digest());
}

export class ErsFormatError extends Error {}

export interface ArchiveTimeStamp {
  /** The hash algorithm of its hash tree (written always; when absent, that of the timestamp's imprint). */
  digestAlgorithm?: ErsHash;
  /** The reduced hash tree, first list first; absent: the timestamp covers the hash itself. */
  reducedHashtree?: Uint8Array[][];
  /** DER of the RFC 3161 TimeStampToken (a CMS ContentInfo). */
  timeStamp: Uint8Array;
}

export type ArchiveTimeStampChain = ArchiveTimeStamp[];

export interface EvidenceRecord {
  /** Every hash algorithm used in the record (§3: all of them, in order of first use). */
  digestAlgorithms: ErsHash[];
  chains: ArchiveTimeStampChain[];
}

// ---------------------------------------------------------------------------------------------
// Hash trees

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return (a[i] ?? 0) - (b[i] ?? 0);
  return a.length - b.length;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && compareBytes(a, b) === 0;
}

const sorted = (values: readonly Uint8Array[]) => [...values].sort(compareBytes);

/** The node of a leaf group: its one value, or the hash of its values sorted and concatenated. */
export function groupNode(alg: ErsHash, values: readonly Uint8Array[]): Uint8Array {
  if (values.length === 0) throw new ErsFormatError('an empty hash list');
  if (values.length === 1) return values[0] as Uint8Array;
  return ersDigest(alg, ...sorted(values));
}

/** The parent of two nodes: the hash of both, sorted and concatenated. */
function parent(alg: ErsHash, a: Uint8Array, b: Uint8Array): Uint8Array {
  return compareBytes(a, b) <= 0 ? ersDigest(alg, a, b) : ersDigest(alg, b, a);
}

export interface HashTree {
  root: Uint8Array;
  /** How many leaves (groups). */
  size: number;
  /** The reduced hash tree of the leaf group given in position `index` of the input. */
  reduced(index: number): Uint8Array[][];
}

/** A hash tree over leaf groups (each a data object group or one hash); see the module comment. */
export function buildHashTree(alg: ErsHash, groups: readonly (readonly Uint8Array[])[]): HashTree {
  if (groups.length === 0) throw new ErsFormatError('a hash tree needs a leaf');
  const leaves = groups.map((g, input) => ({ input, values: sorted(g), node: groupNode(alg, g) }));
  const order = [...leaves].sort((a, b) => compareBytes(a.node, b.node));
  const position = new Map<number, number>(order.map((l, i) => [l.input, i]));
  const levels: Uint8Array[][] = [order.map((l) => l.node)];
  for (let level = levels[0] as Uint8Array[]; level.length > 1; ) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const a = level[i] as Uint8Array;
      const b = level[i + 1];
      next.push(b ? parent(alg, a, b) : a);
    }
    levels.push(next);
    level = next;
  }
  const top = levels[levels.length - 1] as Uint8Array[];
  return {
    root: top[0] as Uint8Array,
    size: groups.length,
    reduced(index: number): Uint8Array[][] {
      const leaf = leaves[index];
      let at = position.get(index);
      if (!leaf || at === undefined) throw new RangeError(`no leaf ${index}`);
      const out: Uint8Array[][] = [leaf.values];
      for (let l = 0; l < levels.length - 1; l++) {
        const sibling = (levels[l] as Uint8Array[])[at ^ 1];
        if (sibling) out.push([sibling]);
        at >>= 1;
      }
      return out;
    },
  };
}

/**
 * The root a reduced hash tree leads to (RFC 4998 §4.3 steps 3–4): the first list's node, then
 * for each next list the hash of that list with the running hash added, sorted and concatenated.
 */
export function rootOfReducedTree(alg: ErsHash, reduced: readonly (readonly Uint8Array[])[]): Uint8Array {
  const [first, ...rest] = reduced;
  if (!first) throw new ErsFormatError('an empty reduced hash tree');
  let h = groupNode(alg, first);
  for (const list of rest) h = ersDigest(alg, ...sorted([...list, h]));
  return h;
}

// ---------------------------------------------------------------------------------------------
// DER

const EVIDENCE_RECORD_VERSION = 1;

function algorithmIdentifier(alg: ErsHash, implicitTag?: number): asn1js.AsnType {
  // RFC 5754 §2: the parameters of the SHA-2 identifiers are absent; NIST's SHA-3 identifiers alike.
  const value = [new asn1js.ObjectIdentifier({ value: ERS_HASH_OIDS[alg] })];
  return implicitTag === undefined ? new asn1js.Sequence({ value }) : new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: implicitTag }, value });
}

function toBytes(node: asn1js.AsnType): Uint8Array {
  return new Uint8Array(node.toBER(false));
}

/**
 * A DER SEQUENCE of already encoded parts (X.690 §8.9, definite length, §10.1 shortest form):
 * asn1js writes every part, this only frames them, so that the timestamp tokens go in byte for byte.
 */
function derSequence(parts: readonly Uint8Array[]): Uint8Array {
  const length = parts.reduce((n, p) => n + p.length, 0);
  const lengthBytes: number[] = [];
  if (length < 0x80) lengthBytes.push(length);
  else {
    for (let n = length; n > 0; n = Math.floor(n / 256)) lengthBytes.unshift(n % 256);
    lengthBytes.unshift(0x80 | lengthBytes.length);
  }
  const out = new Uint8Array(1 + lengthBytes.length + length);
  out[0] = 0x30;
  out.set(lengthBytes, 1);
  let at = 1 + lengthBytes.length;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function encodeArchiveTimeStamp(ats: ArchiveTimeStamp): Uint8Array {
  const parts: Uint8Array[] = [];
  if (ats.digestAlgorithm) parts.push(toBytes(algorithmIdentifier(ats.digestAlgorithm, 0)));
  if (ats.reducedHashtree) {
    parts.push(
      toBytes(
        new asn1js.Constructed({
          idBlock: { tagClass: 3, tagNumber: 2 },
          value: ats.reducedHashtree.map((list) => new asn1js.Sequence({ value: list.map((h) => new asn1js.OctetString({ valueHex: h })) })),
        }),
      ),
    );
  }
  parts.push(ats.timeStamp);
  return derSequence(parts);
}

function encodeChain(chain: ArchiveTimeStampChain): Uint8Array {
  return derSequence(chain.map(encodeArchiveTimeStamp));
}

/** DER of an ArchiveTimeStampSequence of these chains (what hash-tree renewal hashes, §5.2). */
export function encodeArchiveTimeStampSequence(chains: readonly ArchiveTimeStampChain[]): Uint8Array {
  return derSequence(chains.map(encodeChain));
}

export function encodeEvidenceRecord(record: EvidenceRecord): Uint8Array {
  return derSequence([
    toBytes(new asn1js.Integer({ value: EVIDENCE_RECORD_VERSION })),
    toBytes(new asn1js.Sequence({ value: record.digestAlgorithms.map((a) => algorithmIdentifier(a)) })),
    encodeArchiveTimeStampSequence(record.chains),
  ]);
}

/**
 * The hash of the data that the first hash list of chain `c` > 0 must hold after a hash-tree
 * renewal (§5.2, §5.3): H'(H'(data) ‖ H'(DER of the chains before it)), with H' = `alg` and
 * `dataDigest` = H'(data).
 */
export function hashTreeRenewalInput(alg: ErsHash, dataDigest: Uint8Array, earlier: readonly ArchiveTimeStampChain[]): Uint8Array {
  return ersDigest(alg, dataDigest, ersDigest(alg, encodeArchiveTimeStampSequence(earlier)));
}

/**
 * Whether the last chain of `chains` is a hash-tree renewal to `alg` whose first hash list holds
 * the data of digest `dataDigest` (H'(data)): what a verifier holding that data checks of it.
 */
export function lastChainHolds(chains: readonly ArchiveTimeStampChain[], alg: ErsHash, dataDigest: Uint8Array): boolean {
  const first = chains.length > 1 ? chains[chains.length - 1]?.[0] : undefined;
  if (!first || first.digestAlgorithm !== alg || !first.reducedHashtree) return false;
  const h = hashTreeRenewalInput(alg, dataDigest, chains.slice(0, -1));
  return first.reducedHashtree[0]?.some((v) => bytesEqual(v, h)) ?? false;
}

/** Every hash algorithm the chains use, in order of first use (the record's digestAlgorithms). */
export function algorithmsOf(chains: readonly ArchiveTimeStampChain[]): ErsHash[] {
  const out: ErsHash[] = [];
  for (const chain of chains) for (const ats of chain) if (ats.digestAlgorithm && !out.includes(ats.digestAlgorithm)) out.push(ats.digestAlgorithm);
  return out;
}

function expectSequence(node: asn1js.AsnType | undefined, what: string): asn1js.AsnType[] {
  if (!(node instanceof asn1js.Sequence)) throw new ErsFormatError(`${what}: a SEQUENCE was expected`);
  return node.valueBlock.value;
}

function contextTag(node: asn1js.AsnType | undefined): number | undefined {
  return node && node.idBlock.tagClass === 3 ? node.idBlock.tagNumber : undefined;
}

function readAlgorithm(values: asn1js.AsnType[], what: string): ErsHash {
  const [oidNode, params, ...extra] = values;
  if (!(oidNode instanceof asn1js.ObjectIdentifier) || extra.length > 0) throw new ErsFormatError(`${what}: a malformed AlgorithmIdentifier`);
  if (params && !(params instanceof asn1js.Null)) throw new ErsFormatError(`${what}: unexpected algorithm parameters`);
  const oid = oidNode.valueBlock.toString();
  const alg = ersHashByOid(oid);
  if (!alg) throw new ErsFormatError(`${what}: the hash algorithm ${oid} is not supported`);
  return alg;
}

function bytesOf(node: asn1js.AsnType): Uint8Array {
  return new Uint8Array(node.valueBeforeDecodeView);
}

function readAts(node: asn1js.AsnType | undefined, where: string): ArchiveTimeStamp {
  const parts = expectSequence(node, where);
  const ats: Partial<ArchiveTimeStamp> = {};
  let i = 0;
  if (contextTag(parts[i]) === 0) {
    ats.digestAlgorithm = readAlgorithm((parts[i] as asn1js.Constructed).valueBlock.value, `${where} digestAlgorithm`);
    i++;
  }
  if (contextTag(parts[i]) === 1) throw new ErsFormatError(`${where}: attributes are not supported`);
  if (contextTag(parts[i]) === 2) {
    const lists = (parts[i] as asn1js.Constructed).valueBlock.value;
    if (lists.length === 0) throw new ErsFormatError(`${where}: an empty reducedHashtree`);
    ats.reducedHashtree = lists.map((list, l) => {
      const hashes = expectSequence(list, `${where} partial hash tree ${l}`);
      if (hashes.length === 0) throw new ErsFormatError(`${where}: an empty partial hash tree`);
      return hashes.map((h) => {
        if (!(h instanceof asn1js.OctetString) || h.idBlock.isConstructed) throw new ErsFormatError(`${where}: a hash that is not an OCTET STRING`);
        return new Uint8Array(h.valueBlock.valueHexView);
      });
    });
    i++;
  }
  const ts = parts[i];
  if (!(ts instanceof asn1js.Sequence) || i !== parts.length - 1) throw new ErsFormatError(`${where}: the timeStamp ContentInfo is missing or followed by more`);
  ats.timeStamp = bytesOf(ts);
  return ats as ArchiveTimeStamp;
}

/** Parses a DER ArchiveTimeStamp (as {@link encodeArchiveTimeStamp} writes it). */
export function parseArchiveTimeStamp(der: Uint8Array): ArchiveTimeStamp {
  const parsed = asn1js.fromBER(der);
  if (parsed.offset === -1 || parsed.offset !== der.length) throw new ErsFormatError('not a DER ArchiveTimeStamp');
  return readAts(parsed.result, 'archive timestamp');
}

/**
 * Parses a DER EvidenceRecord. Strict: the input must be the record's DER and nothing else (it
 * is encoded again and compared), a version other than 1, cryptoInfos, encryptionInfo and
 * attributes are refused.
 * @throws ErsFormatError
 */
export function parseEvidenceRecord(der: Uint8Array): EvidenceRecord {
  const parsed = asn1js.fromBER(der);
  if (parsed.offset === -1 || parsed.offset !== der.length) throw new ErsFormatError('not a DER EvidenceRecord (malformed, or bytes after it)');
  const parts = expectSequence(parsed.result, 'EvidenceRecord');
  const [version, algs, third, ...rest] = parts;
  if (!(version instanceof asn1js.Integer) || version.valueBlock.valueDec !== EVIDENCE_RECORD_VERSION) throw new ErsFormatError('EvidenceRecord: version 1 was expected');
  const digestAlgorithms = expectSequence(algs, 'digestAlgorithms').map((a, i) => readAlgorithm(expectSequence(a, `digestAlgorithms ${i}`), `digestAlgorithms ${i}`));
  if (contextTag(third) !== undefined || rest.length > 0) throw new ErsFormatError('EvidenceRecord: cryptoInfos and encryptionInfo are not supported');
  const chains = expectSequence(third, 'archiveTimeStampSequence').map((chain, c) => {
    const list = expectSequence(chain, `chain ${c}`);
    if (list.length === 0) throw new ErsFormatError(`chain ${c} is empty`);
    return list.map((ats, a) => readAts(ats, `chain ${c} archive timestamp ${a}`));
  });
  if (chains.length === 0) throw new ErsFormatError('the archiveTimeStampSequence is empty');
  const record = { digestAlgorithms, chains };
  if (!bytesEqual(encodeEvidenceRecord(record), der)) throw new ErsFormatError('not DER: the record does not encode back to the same bytes');
  return record;
}
