import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import type { WebhookUrlPolicy } from '../../domain/webhooks/url-policy.js';
import type { WEBHOOK_ATTEMPT_OUTCOMES } from '../../observability/metrics.js';
import { checkWebhookUrl, type HostResolver } from './webhook-address.js';

/** A 2xx within this long delivers; anything slower is a failed attempt (issue 39). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** Bytes of a response read at most; the rest is never read (the connection is dropped). */
export const WEBHOOK_MAX_RESPONSE_BYTES = 64 * 1024;
/**
 * How long a response's body is read after its status decided the delivery (issue 49): only to
 * keep the connection for the next delivery, and never waited for by the dispatcher. A body not
 * done by then (a receiver trickling it) is cut with its connection.
 */
export const WEBHOOK_BODY_GRACE_MS = 1_000;
/** A receiver's kept-alive connections are closed after this long without a delivery. */
const IDLE_AGENT_MS = 60_000;

export interface WebhookRequest {
  url: string;
  /** The raw JSON body, exactly as signed. */
  body: string;
  /** Ledgerfeed-Signature, Ledgerfeed-Event-Id, Ledgerfeed-Event-Type. */
  headers: Record<string, string>;
}

/**
 * How an attempt ended, for the metrics: delivered (2xx), failed (another status, or the
 * connection failed), timeout (no status within the timeout), refused (the address check): the
 * outcomes `ledgerfeed_webhook_attempts_total` counts, one list.
 */
export type WebhookAttemptKind = (typeof WEBHOOK_ATTEMPT_OUTCOMES)[number];

export interface WebhookOutcome {
  /** A 2xx answer within the timeout. */
  delivered: boolean;
  kind: WebhookAttemptKind;
  /** The receiver's HTTP status, when it answered at all. */
  statusCode: number | null;
  /** Why it failed, for the delivery log; null when delivered. */
  error: string | null;
  durationMs: number;
}

export interface WebhookSender {
  /**
   * Checks the URL (again: DNS can change), then POSTs to the checked address only. Never
   * throws: every failure (refused address, timeout, connection refused, non-2xx) is an outcome.
   * `endpointId` keys the endpoint's kept-alive connections.
   */
  send(endpointId: string, request: WebhookRequest): Promise<WebhookOutcome>;
  /** Closes every kept-alive connection. */
  close(): void;
}

export interface WebhookSenderOptions {
  policy: WebhookUrlPolicy;
  userAgent: string;
  /** The resolver the address check uses (tests pass a spy); unset: the system's. */
  resolve?: HostResolver;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

interface PinnedAgent {
  agent: http.Agent;
  /** The checked address every connection of this agent goes to. */
  address: string;
  protocol: string;
  lastUsed: number;
}

/**
 * Webhook POSTs over node:http(s), one kept-alive agent per endpoint. The address check and the
 * connection cannot disagree: the request's `lookup` answers the address the check just approved
 * (Host header and TLS servername stay the URL's hostname), so a DNS answer that changes between
 * the check and the connection (DNS rebinding) never reaches a private address. An agent pinned to
 * an address the latest check no longer returns is dropped with its sockets.
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const {
    policy,
    userAgent,
    resolve,
    timeoutMs = WEBHOOK_TIMEOUT_MS,
    maxResponseBytes = WEBHOOK_MAX_RESPONSE_BYTES,
  } = options;
  const agents = new Map<string, PinnedAgent>();
  let lastSweep = Date.now();

  const sweep = (now: number) => {
    if (now - lastSweep < IDLE_AGENT_MS) return;
    lastSweep = now;
    for (const [id, pinned] of agents) {
      if (now - pinned.lastUsed < IDLE_AGENT_MS) continue;
      pinned.agent.destroy();
      agents.delete(id);
    }
  };

  const agentFor = (endpointId: string, url: URL, addresses: readonly string[]): PinnedAgent => {
    const now = Date.now();
    sweep(now);
    let pinned = agents.get(endpointId);
    if (pinned && (pinned.protocol !== url.protocol || !addresses.includes(pinned.address))) {
      pinned.agent.destroy();
      pinned = undefined;
    }
    if (!pinned) {
      const transport = url.protocol === 'https:' ? https : http;
      // Two sockets: one may still be closing after a cut-off response while the next delivery starts.
      pinned = {
        agent: new transport.Agent({ keepAlive: true, maxSockets: 2 }),
        address: addresses[0]!,
        protocol: url.protocol,
        lastUsed: now,
      };
      agents.set(endpointId, pinned);
    }
    pinned.lastUsed = now;
    return pinned;
  };

  return {
    send: async (endpointId, request) => {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const checked = await checkWebhookUrl(request.url, policy, resolve).catch(() => ({
        ok: false as const,
        // Its message may name what the host resolved to: the delivery log says only that it failed.
        reason: 'address check failed',
      }));
      if (!checked.ok) {
        return {
          delivered: false,
          kind: 'refused',
          statusCode: null,
          error: `refused address: ${checked.reason}`,
          durationMs: elapsed(),
        };
      }
      if (checked.addresses.length === 0) {
        return {
          delivered: false,
          kind: 'refused',
          statusCode: null,
          error: 'refused address: no address',
          durationMs: elapsed(),
        };
      }
      const pinned = agentFor(endpointId, checked.url, checked.addresses);
      const limits = { userAgent, timeoutMs, maxResponseBytes };
      let answer = await post(checked.url, pinned, request, limits);
      // A kept-alive connection the receiver closed just as we reused it: the request never
      // reached it, so it goes again at once on a new connection rather than waiting 5 s.
      if (answer.staleConnection) answer = await post(checked.url, pinned, request, limits);
      const durationMs = elapsed();
      if (answer.error !== null) {
        const kind = answer.timedOut ? 'timeout' : 'failed';
        return { delivered: false, kind, statusCode: answer.status, error: answer.error, durationMs };
      }
      const status = answer.status!;
      if (status >= 200 && status < 300)
        return { delivered: true, kind: 'delivered', statusCode: status, error: null, durationMs };
      const error =
        status >= 300 && status < 400 ? `redirect (HTTP ${status}) not followed` : `HTTP ${status}`;
      return { delivered: false, kind: 'failed', statusCode: status, error, durationMs };
    },
    close: () => {
      for (const pinned of agents.values()) pinned.agent.destroy();
      agents.clear();
    },
  };
}

/** Answers only the checked address, whatever the hostname: Node calls it instead of DNS. */
function pinnedLookup(address: string): LookupFunction {
  const family = net.isIP(address) === 6 ? 6 : 4;
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as LookupFunction;
}

function post(
  url: URL,
  pinned: PinnedAgent,
  request: WebhookRequest,
  limits: { userAgent: string; timeoutMs: number; maxResponseBytes: number },
): Promise<{ status: number | null; error: string | null; staleConnection: boolean; timedOut: boolean }> {
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let status: number | null = null;
    let settled = false;
    const finish = (error: string | null, staleConnection = false, timedOut = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, error, staleConnection, timedOut });
    };
    const outgoing = transport.request(
      url,
      {
        method: 'POST',
        agent: pinned.agent,
        lookup: pinnedLookup(pinned.address),
        headers: {
          ...request.headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(request.body),
          'user-agent': limits.userAgent,
        },
      },
      (response) => {
        status = response.statusCode ?? 0;
        // The status decides, now: the dispatcher's slot is free whatever the body does (issue 49:
        // a receiver answering 200 then trickling its body held a slot for the whole timeout).
        finish(null);
        // The body is only read to free the connection for the next delivery: nothing keeps it.
        // A body not done within the grace, or larger than the cap, is cut with its connection.
        let read = 0;
        const grace = setTimeout(() => response.destroy(), WEBHOOK_BODY_GRACE_MS);
        grace.unref();
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // Enough: a receiver streaming megabytes does not hold the connection either.
          if (read >= limits.maxResponseBytes) response.destroy();
        });
        response.on('error', () => {});
        response.on('close', () => clearTimeout(grace));
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      finish(status === null ? `no answer within ${limits.timeoutMs / 1000} s` : null, false, true);
    }, limits.timeoutMs);
    outgoing.on('error', (error: Error & { code?: string }) => {
      if (status !== null) return finish(null);
      finish(describeError(error), outgoing.reusedSocket && error.code === 'ECONNRESET');
    });
    outgoing.end(request.body);
  });
}

/**
 * Socket and TLS errors in the words of the delivery log, which the endpoint's owner reads: a
 * generic phrase per kind, never the error's own message (node's name the address connected to,
 * `connect ECONNREFUSED 203.0.113.5:443`, and a certificate's names and IPs).
 */
const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset before an answer',
  EPIPE: 'connection reset before an answer',
  ECONNABORTED: 'connection reset before an answer',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'host unreachable',
  EHOSTDOWN: 'host unreachable',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate not valid for the host',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS certificate not trusted (self-signed)',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS certificate not trusted (self-signed)',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS certificate not trusted',
  HPE_INVALID_CONSTANT: 'the answer is not HTTP',
  HPE_INVALID_STATUS: 'the answer is not HTTP',
};

function describeError(error: Error & { code?: string }): string {
  const known = error.code === undefined ? undefined : SOCKET_ERRORS[error.code];
  if (known) return known;
  if (error.code?.startsWith('ERR_SSL') || error.code?.includes('CERT')) return 'TLS handshake failed';
  if (error.code?.startsWith('HPE_')) return 'the answer is not HTTP';
  return 'connection failed';
}
