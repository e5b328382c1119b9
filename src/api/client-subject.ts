import { isIPv4, isIPv6 } from 'node:net';

/**
 * The rate-limit subject of a client without an account: its IP address, but an IPv6 client by its
 * /64 network. One subscriber line gets a whole /64 (2^64 addresses) to pick from, so a budget per
 * IPv6 address is no budget; per /64 it is one per line, as an IPv4 address is. An IPv4-mapped
 * IPv6 address (`::ffff:1.2.3.4`, how a dual-stack socket shows an IPv4 peer) counts as its IPv4.
 */
export function clientSubject(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (mapped && isIPv4(mapped)) return `ip:${mapped}`;
  if (!isIPv6(ip)) return `ip:${ip}`;
  return `ip6:${ipv6Groups(ip).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, as lowercase hex without leading zeros. */
function ipv6Groups(ip: string): string[] {
  const address = ip.split('%')[0]!; // a zone id (fe80::1%eth0) names an interface, not a network
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').flatMap(hexGroups));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16));
}

/** A group, or an embedded IPv4 tail (`::1.2.3.4`) as its two groups. */
function hexGroups(part: string): string[] {
  if (!part.includes('.')) return [part];
  const [a, b, c, d] = part.split('.').map(Number) as [number, number, number, number];
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
