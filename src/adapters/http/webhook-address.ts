import { lookup } from 'node:dns/promises';
import { judgeAddresses, parseWebhookUrl, type WebhookUrlPolicy } from '../../domain/webhooks/url-policy.js';

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
      const code = (error as { code?: unknown }).code;
      const why = code === 'ENOTFOUND' || code === 'ENODATA' ? 'does not resolve' : 'could not be resolved';
      return { ok: false, reason: `${parsed.host} ${why}${typeof code === 'string' ? ` (${code})` : ''}` };
    }
  }
  const verdict = judgeAddresses(parsed.url, addresses, policy);
  return verdict.ok ? { ok: true, url: parsed.url, addresses } : verdict;
}
