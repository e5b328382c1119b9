import { lookup } from 'node:dns/promises';
import {
  judgeAddress,
  judgeAddresses,
  parseWebhookUrl,
  type WebhookUrlPolicy,
} from '../../domain/webhooks/url-policy.js';

/** Resolves a hostname to every address it has (IPv4 and IPv6), as text. */
export type HostResolver = (hostname: string) => Promise<string[]>;

export type WebhookAddressCheck = { ok: true; url: URL; addresses: string[] } | { ok: false; reason: string };

/**
 * A lookup that never hangs a registration or a delivery: getaddrinfo has no timeout of its own
 * and a resolver that does not answer would hold the request until the client gave up.
 */
const RESOLVE_TIMEOUT_MS = 5_000;

/**
 * The addresses the OS resolver gives for the host: the ones a plain connect would have picked
 * from (getaddrinfo, so /etc/hosts counts as it does for every other client on the machine).
 * Every family, in the resolver's order.
 */
export const resolveHost: HostResolver = async (hostname) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${RESOLVE_TIMEOUT_MS} ms`)),
      RESOLVE_TIMEOUT_MS,
    );
  });
  try {
    const found = await Promise.race([lookup(hostname, { all: true, verbatim: true }), timeout]);
    return found.map((entry) => entry.address);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * The one refusal of a name that does not resolve or resolves to a non-public address (issue 49).
 * The two read the same, and neither names an address nor the resolver's error: what a name
 * resolves to from inside our network (`https://redis/` -> 172.18.0.5) and whether it exists there
 * at all are facts about our network, and an account probing names would otherwise map it.
 */
export const NOT_PUBLIC_REASON =
  'the host does not resolve, or resolves to a private address (or another address that is not public: ' +
  'loopback, link-local, reserved...): webhooks go to public addresses only';
/** A lookup that failed for another reason than the name not existing (no answer, SERVFAIL). */
export const UNRESOLVED_REASON = 'the host could not be resolved just now: try again later';

/**
 * Whether the service may POST to `url`: at registration and again before every delivery, since
 * what a name resolves to can change between the two (DNS rebinding). Resolves the host (an IP
 * literal is taken as it is) and refuses when ANY address is not public unicast, or loopback where
 * the policy allows it. Never connects: the sender connects afterwards, to `addresses` only, so a
 * name cannot resolve to a public address here and to a private one for the connection.
 */
export async function checkWebhookUrl(
  url: string,
  policy: WebhookUrlPolicy,
  resolve: HostResolver = resolveHost,
): Promise<WebhookAddressCheck> {
  const parsed = parseWebhookUrl(url, policy);
  if (!parsed.ok) return parsed;
  let addresses: string[];
  if (parsed.literal) {
    addresses = [parsed.host];
  } else {
    try {
      addresses = await resolve(parsed.host);
    } catch (error) {
      // The resolver's own words (its code, its message) stay here: they describe our DNS.
      const code = (error as { code?: unknown }).code;
      const missing = code === 'ENOTFOUND' || code === 'ENODATA';
      return { ok: false, reason: missing ? NOT_PUBLIC_REASON : UNRESOLVED_REASON };
    }
  }
  const verdict = judgeAddresses(parsed.url, addresses, policy);
  if (verdict.ok) return { ok: true, url: parsed.url, addresses };
  // An IP literal is the client's own text: its range (10.0.0.0/8, IPv4-mapped...) is no news to
  // it and helps it fix the URL. What a name resolved to is ours: one refusal, whatever it was.
  if (parsed.literal) return verdict;
  const notPublic = addresses.length === 0 || addresses.some((address) => !judgeAddress(address, policy).ok);
  return notPublic ? { ok: false, reason: NOT_PUBLIC_REASON } : verdict;
}
