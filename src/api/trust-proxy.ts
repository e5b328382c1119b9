/**
 * Fastify's `trustProxy` for TRUST_PROXY_HOPS proxies of ours in front of the API. proxy-addr asks
 * the function about each address from the socket's peer (hop 0) leftwards through
 * X-Forwarded-For; the first one not trusted is the client. With `hops` proxies the peer and the
 * `hops - 1` rightmost entries are ours, so the client is the `hops`-th entry from the right and
 * anything a client writes further left is ignored. 0 returns false: no X-Forwarded-* header counts
 * (Fastify's plain request), so the client is the peer and cannot choose its address.
 *
 * Not Fastify's numeric form: since 5.12 it fails closed (trusts nothing) because a hop count
 * cannot tell a proxy from a client connecting directly. The same holds here, which is why a
 * deployment that sets hops must let clients reach the API only through its proxies.
 */
export function trustProxyHops(hops: number): false | ((address: string, hop: number) => boolean) {
  if (!Number.isSafeInteger(hops) || hops < 0) {
    throw new RangeError(`trusted proxy hops must be a whole number >= 0, got ${hops}`);
  }
  return hops === 0 ? false : (_address, hop) => hop < hops;
}
