import { mlDsaKeyId } from '../crypto/ml-dsa.js';
import { checkChainHash, checkPreviousHash, effectiveLink } from './proof-check.js';
import { bundleOf, judgePq, type TrustedKey } from './verdict.js';
import type { ChainLink } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { isAnchored } from './records.js';

/**
 * The domain behind the public v1 read endpoints (api-v1.md "Endpoints"): a device's chain with
 * its integrity verdict, and the post-quantum check of one record. Every verdict is computed now
 * from stored bytes, never read from a stored flag.
 */

/** One entry of a device chain as GET /chain/all lists it. */
export interface ChainEntry {
  chain_index: number;
  image_hash: string;
  chain_hash: string;
  previous_hash: string | null;
  signature_hex: string;
  device_id?: string;
  /** `anchoring`: claimed by a request that is still running (its proofs are not stored yet). */
  state: 'anchored' | 'anchoring';
  anchored_at?: string;
  tx_hash?: string;
}

/** A link that does not hold. */
export interface BrokenLink {
  chain_index: number;
  /**
   * `chain_hash_mismatch`: chain_hash ≠ SHA-256(previous_hash, or 32 zero bytes at index 0, || image_hash).
   * `previous_hash_mismatch`: previous_hash ≠ the chain_hash of the entry before (or not null at index 0).
   */
  problem: 'chain_hash_mismatch' | 'previous_hash_mismatch';
  expected: string | null;
  found: string | null;
}

/** The integrity verdict over the entries of a page and the link into the entry before it. */
export interface ChainIntegrity {
  /** `chain`: the page is the whole chain. `page`: the verdict covers checked_from_index..checked_to_index only. */
  scope: 'chain' | 'page';
  /** `broken` wins over `incomplete` (gaps); `complete` means neither. */
  verdict: 'complete' | 'incomplete' | 'broken';
  complete: boolean;
  checked_from_index: number;
  checked_to_index: number | null;
  /** Missing indexes, as inclusive ranges. */
  gaps: { from_index: number; to_index: number }[];
  broken_links: BrokenLink[];
}

export interface ChainPage {
  public_key_hex: string;
  /** Highest index + 1 (entries present or not). */
  chain_length: number;
  entries: ChainEntry[];
  limit: number;
  cursor: string | null;
  next_cursor: string | null;
  integrity: ChainIntegrity;
}

/** Reads a cursor of GET /chain/all: the index to continue from (undefined for a malformed one). */
export function parseChainCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined || cursor === '') return 0;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(cursor)) return undefined;
  const n = Number(cursor);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * One page of a device's chain, from index `from`, at most `limit` entries, with the integrity
 * verdict over them and the link into entry `from - 1`. Each chain_hash is recomputed from its
 * previous_hash and image_hash; each previous_hash is compared with the chain_hash of the entry
 * before; each missing index is a gap. A claim whose request died (expired) counts as missing.
 * Returns undefined for a device without any chain entry. Round trips: 3 (head, the entry before
 * the page, the page), in parallel.
 */
export async function readChainPage(repo: EvidenceRepository, publicKeyHex: string, from: number, limit: number): Promise<ChainPage | undefined> {
  const [storedHead, storedBefore, storedPage] = await Promise.all([
    repo.lastLink(publicKeyHex),
    from > 0 ? repo.getLink(publicKeyHex, from - 1) : Promise.resolve(undefined),
    repo.listLinks(publicKeyHex, from, limit),
  ]);
  if (!storedHead) return undefined;
  // A link that is not marked anchored either lags its anchored evidence item (proof-check.ts
  // deriveLinkState), or belongs to an anchor under way, or was left behind by a released one
  // (an orphan, freed by the next claim of its index): read the items of those links (usually
  // none) and report what they say.
  const lagging = [...new Set([storedHead, storedBefore, ...storedPage].filter((l): l is ChainLink => !!l && l.state !== 'anchored').map((l) => l.image_hash))];
  const items = new Map(await Promise.all(lagging.map(async (h) => [h, await repo.get(h)] as const)));
  const shown = (l: ChainLink | undefined) => (l ? effectiveLink(l, items.get(l.image_hash)) : undefined);
  const head = shown(storedHead) ?? storedHead;
  const before = shown(storedBefore);
  const raw = storedPage.map((l) => shown(l) ?? l);
  // A claimed link is part of the chain while its evidence holds it (repository.ts claimLink):
  // an anchor under way is shown as such, an orphan is not.
  const held = (l: ChainLink): boolean => {
    if (l.state === 'anchored') return true;
    const item = items.get(l.image_hash);
    return item?.anchor_state !== undefined && item.public_key_hex === l.public_key_hex && item.chain_index === l.chain_index;
  };
  const live = (l: ChainLink | undefined): l is ChainLink => !!l && held(l);
  const links = raw.filter(live).sort((a, b) => a.chain_index - b.chain_index);

  const gaps: ChainIntegrity['gaps'] = [];
  const broken: BrokenLink[] = [];
  let expected = from;
  let predecessor: ChainLink | undefined = from > 0 && live(before) ? before : undefined;
  // The entry before the page is part of the check (the link into the page); when it is missing,
  // the gap starts there.
  let gapStart: number | undefined = from > 0 && !predecessor ? from - 1 : undefined;
  for (const link of links) {
    if (link.chain_index > expected) {
      gapStart ??= expected;
      predecessor = undefined;
    }
    if (gapStart !== undefined) {
      gaps.push({ from_index: gapStart, to_index: link.chain_index - 1 });
      gapStart = undefined;
    }
    checkLink(link, predecessor, broken);
    predecessor = link;
    expected = link.chain_index + 1;
  }

  const lastRaw = raw.at(-1);
  const headLength = held(head) ? head.chain_index + 1 : head.chain_index;
  const next = lastRaw && lastRaw.chain_index < head.chain_index ? String(lastRaw.chain_index + 1) : null;
  const complete = gaps.length === 0 && broken.length === 0;
  return {
    public_key_hex: publicKeyHex,
    chain_length: headLength,
    entries: links.map(toEntry),
    limit,
    cursor: from > 0 ? String(from) : null,
    next_cursor: next,
    integrity: {
      scope: from === 0 && next === null ? 'chain' : 'page',
      verdict: broken.length > 0 ? 'broken' : gaps.length > 0 ? 'incomplete' : 'complete',
      complete,
      checked_from_index: from > 0 ? from - 1 : 0,
      checked_to_index: links.at(-1)?.chain_index ?? null,
      gaps,
      broken_links: broken,
    },
  };
}

/** decisions.md "Device chains", as proof-check.ts judges it: the link into the entry before, then chain_hash. */
function checkLink(link: ChainLink, predecessor: ChainLink | undefined, broken: BrokenLink[]): void {
  const previous = checkPreviousHash(link, predecessor?.chain_hash);
  if (!previous.ok) broken.push({ chain_index: link.chain_index, problem: 'previous_hash_mismatch', expected: previous.expected, found: previous.found });
  const chain = checkChainHash(link);
  if (!chain.ok) broken.push({ chain_index: link.chain_index, problem: 'chain_hash_mismatch', expected: chain.expected, found: chain.found });
}

function toEntry(link: ChainLink): ChainEntry {
  return {
    chain_index: link.chain_index,
    image_hash: link.image_hash,
    chain_hash: link.chain_hash,
    previous_hash: link.previous_hash,
    signature_hex: link.signature_hex,
    ...(link.device_id ? { device_id: link.device_id } : {}),
    state: link.state === 'anchored' ? 'anchored' : 'anchoring',
    ...(link.anchored_at ? { anchored_at: link.anchored_at } : {}),
    ...(link.tx_hash ? { tx_hash: link.tx_hash } : {}),
  };
}

/** GET /pq/verify: the ML-DSA-65 signature of one record, re-verified now. */
export interface PqVerification {
  found: true;
  image_hash: string;
  /** The signature verifies, with a key this service publishes, over a server_hash that is the SHA-256 of this record's statement. */
  verified: boolean;
  algorithm: 'ML-DSA-65';
  standard: 'FIPS 204';
  signature_valid: boolean;
  key_trusted: boolean;
  statement_matches: boolean;
  server_hash: string;
  server_hash_recomputed: string;
  signed_message: 'server_hash (32 raw bytes)';
  key_id: string;
  public_key_fingerprint: string;
  public_key: string;
  pq_signature: string;
  statement: string;
  anchored_at: string;
}

/** What a read endpoint answers for a hash that is registered (v2) but not anchored. */
export interface NotAnchored {
  found: false;
  image_hash: string;
  registered: boolean;
  registered_at?: string;
}

/**
 * Re-verifies the stored ML-DSA-65 signature (FIPS 204 Algorithm 3, pure, empty context) over the
 * 32 bytes of server_hash, recomputes server_hash = SHA-256(statement) and checks that the
 * statement names this record, and that the public key is one this service signs with.
 * Returns undefined for an unknown hash; `found: false` for a registered but unanchored one.
 */
export async function verifyPqRecord(
  deps: { repo: EvidenceRepository; trustedPqKeys(): Promise<TrustedKey[]> },
  imageHash: string,
): Promise<PqVerification | NotAnchored | undefined> {
  const item = await deps.repo.get(imageHash);
  if (!isAnchored(item)) return notAnchored(await deps.repo.firstRegistration(imageHash, item), imageHash);
  // The post-quantum part of the one verdict (verdict.ts judgePq): the same "pq verified" as v2 verify's pq_verified.
  const pq = judgePq(bundleOf(item), await deps.trustedPqKeys());
  const signatureValid = pq.pq_signature.state === 'holds';
  const keyTrusted = pq.pq_key.state === 'holds';
  const statementMatches = pq.statement.state === 'holds';
  const fingerprint = pq.key_fingerprint;
  const publicKey = Buffer.from(item.pq_public_key, 'base64');
  return {
    found: true,
    image_hash: imageHash,
    verified: pq.pq_verified,
    algorithm: 'ML-DSA-65',
    standard: 'FIPS 204',
    signature_valid: signatureValid,
    key_trusted: keyTrusted,
    statement_matches: statementMatches,
    server_hash: item.server_hash,
    server_hash_recomputed: pq.statement_hash,
    signed_message: 'server_hash (32 raw bytes)',
    key_id: mlDsaKeyId(publicKey),
    public_key_fingerprint: fingerprint,
    public_key: item.pq_public_key,
    pq_signature: item.pq_signature,
    statement: item.statement,
    anchored_at: item.anchored_at,
  };
}

/** undefined for an unknown hash, `found: false` with the first registration by any account for a registered one. */
export function notAnchored(firstRegisteredAt: string | undefined, imageHash: string): NotAnchored | undefined {
  if (firstRegisteredAt === undefined) return undefined;
  return { found: false, image_hash: imageHash, registered: true, registered_at: firstRegisteredAt };
}

/** Wei as a decimal amount of the native coin (18 decimals), without trailing zeros: 1500000000000000000n → "1.5". */
export function formatWei(wei: bigint): string {
  const negative = wei < 0n;
  const abs = negative ? -wei : wei;
  const whole = abs / 10n ** 18n;
  const fraction = (abs % 10n ** 18n).toString().padStart(18, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : '.0'}`;
}
