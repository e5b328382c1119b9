import { setTimeout as sleep } from 'node:timers/promises';
import { LedgerfeedError, retryAfterSeconds } from './errors.js';

/** How the client retries; every field has a default (see `createLedgerfeedClient`). */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** A `Retry-After` longer than this is not waited for: the 429 or 503 is thrown instead. */
  maxRetryAfterSec: number;
  /** The first wait after a network error or a 503 without `Retry-After`; it doubles each time. */
  backoffMs: number;
  /**
   * An attempt with no answer after this long is given up (and retried when a resend is safe): a
   * connection that went silent would otherwise hold the call for minutes. Longer than the
   * server's own wait for a paid write (WRITE_TIMEOUT_MS, 10 s by default, then 202).
   */
  attemptTimeoutMs: number;
}

/** What a request may do again: what makes sending it twice safe. */
export interface Resend {
  /**
   * A paid write: it gets an `Idempotency-Key` (unless the caller set one), the same on every
   * attempt, so the server answers a retry with the first result and charges once.
   */
  idempotencyKey: boolean;
  /** Whether a network error or a 503 may be retried: a read, or a write whose retry cannot pay twice. */
  safe: boolean;
}

export interface Transport {
  /**
   * Sends `request` until it is answered for good: retried on 429 (any request: the server refused
   * it before doing anything) after its `Retry-After`; on a network error or a 503 only when
   * `resend.safe`. Answers the last response, whatever its status; throws a LedgerfeedError with
   * status 0 when no answer came.
   */
  send(request: Request, resend: Resend): Promise<Response>;
}

export function createTransport(options: {
  apiKey: string | undefined;
  fetch: (request: Request) => Promise<Response>;
  retry: RetryPolicy;
  newIdempotencyKey: () => string;
}): Transport {
  const { retry } = options;
  return {
    async send(request, resend) {
      if (options.apiKey !== undefined && !request.headers.has('authorization')) {
        request.headers.set('authorization', `Bearer ${options.apiKey}`);
      }
      // Made once, before the first attempt: every retry carries the same key.
      if (resend.idempotencyKey && !request.headers.has('idempotency-key')) {
        request.headers.set('idempotency-key', options.newIdempotencyKey());
      }
      for (let attempt = 0; ; attempt++) {
        const last = attempt >= retry.maxRetries;
        let response: Response;
        const timeout = AbortSignal.timeout(retry.attemptTimeoutMs);
        try {
          // A copy each time: a body can be read once, and the first attempt may have read it.
          const attemptRequest = new Request(request.clone(), {
            signal: AbortSignal.any([request.signal, timeout]),
          });
          response = await options.fetch(attemptRequest);
        } catch (cause) {
          // The caller's own abort ends the call; a lost or silent connection may be retried.
          const failure = request.signal.aborted
            ? { error: 'aborted', what: 'aborted by the caller' }
            : timeout.aborted
              ? { error: 'timeout', what: `no answer within ${retry.attemptTimeoutMs} ms` }
              : { error: 'network_error', what: `no answer (${describe(cause)})` };
          if (last || !resend.safe || request.signal.aborted) {
            throw new LedgerfeedError(
              0,
              failure.error,
              `${request.method} ${new URL(request.url).pathname}: ${failure.what}`,
              {},
              undefined,
              { cause },
            );
          }
          await pause(retry.backoffMs * 2 ** attempt, request);
          continue;
        }
        const retryable = response.status === 429 || (response.status === 503 && resend.safe);
        if (!retryable || last) return response;
        const waitSec = retryAfterSeconds(response.headers);
        if (waitSec !== undefined && waitSec > retry.maxRetryAfterSec) return response;
        await response.body?.cancel();
        await pause(waitSec !== undefined ? waitSec * 1000 : retry.backoffMs * 2 ** attempt, request);
      }
    },
  };
}

/** Waits before a retry; the caller's abort ends the wait, and the call. */
async function pause(ms: number, request: Request): Promise<void> {
  try {
    await sleep(ms, undefined, { signal: request.signal });
  } catch (cause) {
    const path = new URL(request.url).pathname;
    throw new LedgerfeedError(
      0,
      'aborted',
      `${request.method} ${path}: aborted by the caller`,
      {},
      undefined,
      {
        cause,
      },
    );
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause.cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' ? `${cause.message}: ${code}` : cause.message;
  }
  return String(cause);
}
