/**
 * Which addresses a webhook may be sent to (docs/webhooks.md "Server-side request forgery";
 * OWASP API7): only public unicast. Every address a target's host resolves to must pass, at
 * subscription (so a refused URL is a 400 then) and again at connect time, on the connection
 * actually used (lib/net/webhook-http.ts), so that a DNS answer that changes in between (DNS
 * rebinding) gains nothing.
 *
 * The ranges are the IANA special-purpose registries' (RFC 6890 and its updates) and multicast;
 * Node's own `net.BlockList` matches them, and matches an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`, `::ffff:a00:1`) against the IPv4 ranges, so every mapped form of a refused
 * IPv4 address is refused too. Anything that embeds an IPv4 address by another translation
 * (NAT64, 6to4, Teredo, IPv4-compatible) is refused outright: which address it reaches is not ours to judge.
 */
import { BlockList, isIP } from 'node:net';

/** The policy a deployment runs with: deployed stages refuse loopback and plain http (lib/config.ts WEBHOOK_ALLOW_PRIVATE_TARGETS). */
export interface TargetPolicy {
  /** Loopback (127.0.0.0/8, ::1) allowed: `npm start` on a developer's machine, and nothing else private. */
  allowLoopback: boolean;
  /** Only https URLs. */
  requireHttps: boolean;
}

type Range = [address: string, prefix: number, family: 'ipv4' | 'ipv6'];

/** The refused classes, each with its ranges. `loopback` is the one a policy may allow. */
const CLASSES: Record<string, Range[]> = {
  loopback: [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']],
  unspecified: [['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']],
  private: [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4']],
  'carrier-grade NAT': [['100.64.0.0', 10, 'ipv4']],
  'link-local': [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']],
  multicast: [['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']],
  reserved: [
    ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
    ['192.0.2.0', 24, 'ipv4'], // documentation
    ['192.88.99.0', 24, 'ipv4'], // 6to4 relay anycast
    ['198.18.0.0', 15, 'ipv4'], // benchmarking
    ['198.51.100.0', 24, 'ipv4'],
    ['203.0.113.0', 24, 'ipv4'],
    ['240.0.0.0', 4, 'ipv4'], // reserved, and the broadcast address
    ['100::', 64, 'ipv6'], // discard
    ['2001:db8::', 32, 'ipv6'], // documentation
    ['2001:10::', 28, 'ipv6'], // ORCHID
    ['fec0::', 10, 'ipv6'], // site-local (deprecated)
  ],
  'unique local': [['fc00::', 7, 'ipv6']],
  'IPv4 translation': [
    ['::', 96, 'ipv6'], // IPv4-compatible (deprecated)
    ['64:ff9b::', 96, 'ipv6'], // NAT64
    ['64:ff9b:1::', 48, 'ipv6'],
    ['2001::', 32, 'ipv6'], // Teredo
    ['2002::', 16, 'ipv6'], // 6to4
  ],
};

const LISTS = Object.entries(CLASSES).map(([name, ranges]) => {
  const list = new BlockList();
  for (const [address, prefix, family] of ranges) list.addSubnet(address, prefix, family);
  return { name, list };
});

/** The class an address is refused as under `policy`, or undefined when it is public unicast (or allowed loopback). */
export function refusedAddressClass(address: string, policy: Pick<TargetPolicy, 'allowLoopback'>): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const mapped = type === 'ipv6' && /^::ffff:/i.test(bare);
  for (const { name, list } of LISTS) {
    // An IPv4-mapped address is judged as its IPv4 address (BlockList does so): "IPv4 translation" (::/96) is not its class.
    if (mapped && name === 'IPv4 translation') continue;
    if (!list.check(bare, type)) continue;
    if (name === 'loopback' && policy.allowLoopback) return undefined;
    return mapped ? `${name} (IPv4-mapped)` : name;
  }
  return undefined;
}

/** Resolves a host name to every address it has (dns.lookup, all of them). */
export type Resolve = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** Why `url` cannot be a webhook target under `policy`, or undefined. Resolves its host with `resolve`. */
export async function refusedTarget(url: string, policy: TargetPolicy, resolve: Resolve): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not an absolute URL';
  }
  if (url.length > 2048) return 'longer than 2048 characters';
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && !policy.requireHttps)) return policy.requireHttps ? 'only https URLs are accepted' : 'only http and https URLs are accepted';
  if (parsed.username || parsed.password) return 'a URL with credentials is not accepted';
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const refused = refusedAddressClass(host, policy);
    return refused ? `${host} is ${refused}` : undefined;
  }
  let addresses: { address: string }[];
  try {
    addresses = await resolve(host);
  } catch {
    return `${host} does not resolve`;
  }
  if (addresses.length === 0) return `${host} does not resolve`;
  for (const { address } of addresses) {
    const refused = refusedAddressClass(address, policy);
    if (refused) return `${host} resolves to ${address}, which is ${refused}`;
  }
  return undefined;
}
