/**
 * Which webhook URLs the service may POST to. A webhook makes our server send requests to an
 * address a client chose, so without this rule any account could reach what only our own network
 * reaches (cloud metadata at 169.254.169.254, databases on 10.x, the service itself on 127.0.0.1).
 * Pure: the adapter (adapters/http/webhook-address.ts) resolves the host and hands every address
 * here; a URL passes only when every one of them is a public unicast address (or loopback, when
 * the policy allows it), and the sender then connects to those addresses only.
 */

export interface WebhookUrlPolicy {
  /**
   * Loopback addresses (127.0.0.0/8, ::1) are allowed, and then plain `http` to them: a developer
   * receiving on their own machine, and the tests. Config: WEBHOOK_ALLOW_LOOPBACK, unset meaning
   * allowed outside production.
   */
  allowLoopback: boolean;
  /** Every URL must be `https` (except loopback ones when those are allowed): production. */
  requireHttps: boolean;
}

/** The policy of a deployment from its settings (WEBHOOK_ALLOW_LOOPBACK, NODE_ENV). */
export function webhookUrlPolicyOf(settings: {
  production: boolean;
  allowLoopback: boolean | undefined;
}): WebhookUrlPolicy {
  return {
    allowLoopback: settings.allowLoopback ?? !settings.production,
    requireHttps: settings.production,
  };
}

export type UrlVerdict<T extends object = object> = ({ ok: true } & T) | { ok: false; reason: string };

/** Longer URLs are mistakes or attempts to store data with us; browsers' practical limit. */
export const MAX_WEBHOOK_URL_LENGTH = 2_048;

/**
 * The checks that need no resolution, in the order a client fixes them: a URL at all, http(s),
 * no credentials, https where required. `host` is the hostname to resolve, or the IP literal (IPv6
 * without its brackets) when `literal` is true. WHATWG URL parsing has already normalised every
 * IPv4 spelling (`2130706433`, `0x7f.1`, `0177.0.0.1`) to dotted decimal, and IPv6 to its
 * compressed form, so a literal cannot slip past as a hostname.
 */
export function parseWebhookUrl(
  text: string,
  policy: WebhookUrlPolicy,
): UrlVerdict<{ url: URL; host: string; literal: boolean }> {
  if (text.length > MAX_WEBHOOK_URL_LENGTH)
    return refused(`the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refused('not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return refused(`the scheme must be https or http, not ${url.protocol.slice(0, -1)}`);
  if (url.username !== '' || url.password !== '')
    return refused('the URL must not carry credentials (user:password@): put a token in the path instead');
  // Without loopback allowed, plain http can never pass in production: refused before any lookup.
  if (url.protocol === 'http:' && policy.requireHttps && !policy.allowLoopback)
    return refused('the scheme must be https');
  if (url.hostname === '') return refused('the URL has no host');
  if (url.port === '0') return refused('port 0 is not a port one can receive on');
  const bracketed = url.hostname.startsWith('[');
  const host = bracketed ? url.hostname.slice(1, -1) : url.hostname;
  return { ok: true, url, host, literal: bracketed || parseIPv4(host) !== undefined };
}

/**
 * Judges the addresses the URL's host resolved to: refused when any one is not public unicast
 * (a name that resolves to a public address and to 127.0.0.1 is refused: the sender might be
 * handed either), or when the URL is plain http where https is required and not every address is
 * an allowed loopback one.
 */
export function judgeAddresses(url: URL, addresses: readonly string[], policy: WebhookUrlPolicy): UrlVerdict {
  if (addresses.length === 0) return refused(`${url.hostname} resolves to no address`);
  let allLoopback = true;
  for (const address of addresses) {
    const verdict = judgeAddress(address, policy);
    if (!verdict.ok) return verdict;
    allLoopback &&= verdict.loopback;
  }
  if (url.protocol === 'http:' && policy.requireHttps && !allLoopback)
    return refused('the scheme must be https');
  return { ok: true };
}

/** One address: public unicast passes; loopback passes when the policy allows it. */
export function judgeAddress(address: string, policy: WebhookUrlPolicy): UrlVerdict<{ loopback: boolean }> {
  const range = specialRangeOf(address);
  if (range === undefined) return { ok: true, loopback: false };
  if (range.kind === 'loopback' && policy.allowLoopback) return { ok: true, loopback: true };
  if (range.kind === 'invalid') return refused(`${address} is not an IP address`);
  const via = range.embedded ? ` (${range.embedded})` : '';
  return refused(
    `${address}${via} is ${KIND_NAMES[range.kind]} address (${range.cidr}): webhooks go to public addresses only`,
  );
}

export type RangeKind =
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'unique-local'
  | 'unspecified'
  | 'multicast'
  | 'reserved'
  | 'invalid';

const KIND_NAMES: Readonly<Record<RangeKind, string>> = {
  loopback: 'a loopback',
  private: 'a private',
  'link-local': 'a link-local (cloud metadata)',
  cgnat: 'a carrier-grade NAT',
  'unique-local': 'a unique-local',
  unspecified: 'an unspecified',
  multicast: 'a multicast or broadcast',
  reserved: 'a reserved or non-global',
  invalid: 'an invalid',
};

export interface SpecialRange {
  kind: RangeKind;
  cidr: string;
  /** How the IPv4 address inside an IPv6 one was read: "IPv4-mapped 10.0.0.5", "6to4 of ...". */
  embedded?: string;
}

/**
 * The special-purpose range an address falls in (IANA's IPv4 and IPv6 special-purpose registries,
 * the ranges not globally reachable), or undefined for a public unicast address.
 */
export function specialRangeOf(address: string): SpecialRange | undefined {
  const v4 = parseIPv4(address);
  if (v4 !== undefined) return specialV4(v4);
  const v6 = parseIPv6(address);
  if (v6 === undefined) return { kind: 'invalid', cidr: address };
  return specialV6(v6);
}

const V4_RANGES: ReadonlyArray<readonly [string, RangeKind]> = [
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['224.0.0.0/4', 'multicast'],
  // 240/4 "future use", 255.255.255.255 (broadcast) included.
  ['240.0.0.0/4', 'reserved'],
];

const V4_TABLE = V4_RANGES.map(([cidr, kind]) => {
  const [base, bits] = cidr.split('/') as [string, string];
  return { cidr, kind, base: parseIPv4(base)!, bits: Number(bits) };
});

function specialV4(value: number): SpecialRange | undefined {
  for (const range of V4_TABLE) {
    if (inV4(value, range.base, range.bits)) return { kind: range.kind, cidr: range.cidr };
  }
  return undefined;
}

function inV4(value: number, base: number, bits: number): boolean {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (value & mask) >>> 0 === (base & mask) >>> 0;
}

/**
 * IPv6. Only 2000::/3 is global unicast today; everything outside it is refused except the forms
 * that carry an IPv4 address, which are judged by that address: IPv4-mapped (::ffff:a.b.c.d, what
 * a dual-stack socket connects to as plain IPv4; loopback there counts as loopback), NAT64
 * (64:ff9b::/96) and 6to4 (2002::/16) (tunnels: a public address inside passes, anything else is
 * refused, loopback included, since the packet leaves the machine first).
 */
function specialV6(value: bigint): SpecialRange | undefined {
  if (value === 0n) return { kind: 'unspecified', cidr: '::/128' };
  if (value === 1n) return { kind: 'loopback', cidr: '::1/128' };
  if (inV6(value, 0xffff_0000_0000n, 96)) {
    const v4 = Number(value & 0xffff_ffffn);
    const inner = specialV4(v4);
    return inner && { ...inner, embedded: `IPv4-mapped ${formatIPv4(v4)}` };
  }
  if (inV6(value, 0n, 96)) return { kind: 'reserved', cidr: '::/96 (IPv4-compatible, deprecated)' };
  if (inV6(value, v6('64:ff9b::'), 96)) return tunnelled(Number(value & 0xffff_ffffn), 'NAT64 of');
  if (inV6(value, v6('2002::'), 16)) return tunnelled(Number((value >> 80n) & 0xffff_ffffn), '6to4 of');
  for (const range of V6_TABLE) {
    if (inV6(value, range.base, range.bits)) return { kind: range.kind, cidr: range.cidr };
  }
  if (!inV6(value, v6('2000::'), 3)) return { kind: 'reserved', cidr: 'outside 2000::/3' };
  return undefined;
}

function tunnelled(v4: number, how: string): SpecialRange | undefined {
  const inner = specialV4(v4);
  if (!inner) return undefined;
  return {
    kind: inner.kind === 'loopback' ? 'reserved' : inner.kind,
    cidr: inner.cidr,
    embedded: `${how} ${formatIPv4(v4)}`,
  };
}

const V6_RANGES: ReadonlyArray<readonly [string, RangeKind]> = [
  ['64:ff9b:1::/48', 'reserved'],
  ['100::/64', 'reserved'],
  // IETF protocol assignments: Teredo (2001::/32, an obfuscated IPv4 inside), benchmarking, ORCHID.
  ['2001::/23', 'reserved'],
  ['2001:db8::/32', 'reserved'],
  ['3fff::/20', 'reserved'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'reserved'],
  ['ff00::/8', 'multicast'],
];

const V6_TABLE = V6_RANGES.map(([cidr, kind]) => {
  const [base, bits] = cidr.split('/') as [string, string];
  return { cidr, kind, base: v6(base), bits: Number(bits) };
});

function v6(text: string): bigint {
  const value = parseIPv6(text);
  if (value === undefined) throw new Error(`bad IPv6 constant ${text}`);
  return value;
}

function inV6(value: bigint, base: bigint, bits: number): boolean {
  const shift = BigInt(128 - bits);
  return value >> shift === base >> shift;
}

/** Strict dotted decimal (what URL parsing and DNS answers give), as an unsigned 32-bit number. */
export function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

function formatIPv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}

/**
 * An IPv6 address as a 128-bit number: hex groups, one `::`, an optional dotted IPv4 tail. A zone
 * (`fe80::1%eth0`) is dropped: the address is judged, and every zoned address is link-local anyway.
 */
export function parseIPv6(text: string): bigint | undefined {
  const address = text.split('%')[0]!;
  if (!/^[0-9a-fA-F:.]+$/.test(address)) return undefined;
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    const pieces = part.split(':');
    for (const [index, piece] of pieces.entries()) {
      if (piece.includes('.')) {
        if (index !== pieces.length - 1) return undefined;
        const v4 = parseIPv4(piece);
        if (v4 === undefined) return undefined;
        groups.push(v4 >>> 16, v4 & 0xffff);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) {
        groups.push(parseInt(piece, 16));
      } else {
        return undefined;
      }
    }
    return groups;
  };
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (!head || !tail) return undefined;
  // A dotted tail belongs only at the very end.
  if (halves.length === 2 && halves[0]!.includes('.')) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return groups.reduce((sum, group) => (sum << 16n) | BigInt(group), 0n);
}

function refused(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}
