import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The careful client of the chaos run: a paid write carries an Idempotency-Key and is sent again
 * with the same key after a 5xx, a 409 "still in progress" (the key is held by a request in flight,
 * or by one that died), a dropped connection or a timeout, until it gets a final answer: a 2xx, or another
 * 4xx. Every attempt is recorded, with when it started, for the per-fault table.
 */

export type AttemptKind =
  | 'ok' // 2xx
  | 'refused' // a final 4xx (402 insufficient balance, ...)
  | 'unavailable' // a clean 503 {"error","message"}
  | 'internal' // any other 5xx, or a 503 whose body leaks internals: the target is none
  | 'busy' // 409 "still in progress": the key is held by a request in flight; retried
  | 'dropped' // connection refused or reset: the process is down or restarting
  | 'hang'; // no answer within the client's timeout (WRITE_TIMEOUT_MS + a margin)

export interface Attempt {
  startedAt: number;
  endedAt: number;
  kind: AttemptKind;
  paid: boolean;
  status: number;
  /** Kept for 5xx answers and hangs: the report quotes them. */
  detail?: string;
}

export interface Final {
  status: number;
  body: Record<string, unknown>;
}

/** Signs of a server's insides in a message meant for a client. */
const INTERNALS =
  /ECONN|ETIMEDOUT|EPIPE|\bat \S+:\d+|\.ts\b|\.js\b|127\.0\.0\.1|localhost:|SELECT |INSERT |UPDATE |relation "|Connection terminated|stack/i;

export function classify(status: number, text: string): { kind: AttemptKind; detail?: string } {
  if (status >= 200 && status < 300) return { kind: 'ok' };
  // Only the idempotency hook's 409 (the key is held by a request in flight) is worth a retry;
  // another 409 ("You already reposted ...") is a final answer.
  if (status === 409 && /Idempotency-Key is still in progress/.test(text)) return { kind: 'busy' };
  if (status < 500) return { kind: 'refused' };
  let clean = false;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    clean =
      status === 503 &&
      typeof body.error === 'string' &&
      typeof body.message === 'string' &&
      !INTERNALS.test(body.message);
  } catch {
    // not JSON: not a clean answer
  }
  return clean ? { kind: 'unavailable' } : { kind: 'internal', detail: `${status} ${text.slice(0, 300)}` };
}

export interface ClientOptions {
  base: () => string;
  timeoutMs: number;
  record: (attempt: Attempt) => void;
  /** Stop retrying (end of run) after this time; the write then counts as unanswered. */
  giveUpAt: () => number;
}

/** One HTTP attempt, classified. */
async function attempt(
  options: ClientOptions,
  key: string,
  method: string,
  path: string,
  body: unknown,
  idempotencyKey: string | undefined,
): Promise<{ kind: AttemptKind; final?: Final }> {
  const startedAt = Date.now();
  const paid = idempotencyKey !== undefined;
  try {
    const response = await fetch(`${options.base()}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await response.text();
    const { kind, detail } = classify(response.status, text);
    options.record({ startedAt, endedAt: Date.now(), kind, paid, status: response.status, detail });
    if (kind === 'ok' || kind === 'refused') {
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // a final answer without JSON: kept as empty
      }
      return { kind, final: { status: response.status, body: parsed } };
    }
    return { kind };
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    const kind: AttemptKind = timedOut ? 'hang' : 'dropped';
    const detail = timedOut ? `${method} ${path}: no answer within ${options.timeoutMs} ms` : undefined;
    options.record({ startedAt, endedAt: Date.now(), kind, paid, status: 0, detail });
    return { kind };
  }
}

/**
 * Sends until final (paid writes, with `idempotencyKey`) or once (free requests). Resolves to the
 * final answer (none when the run ended first) and the kind of every attempt.
 */
export async function send(
  options: ClientOptions,
  key: string,
  method: string,
  path: string,
  body: unknown,
  idempotencyKey?: string,
): Promise<{ final?: Final; kinds: AttemptKind[] }> {
  const kinds: AttemptKind[] = [];
  for (let tries = 0; ; tries += 1) {
    const { kind, final } = await attempt(options, key, method, path, body, idempotencyKey);
    kinds.push(kind);
    if (final) return { final, kinds };
    if (idempotencyKey === undefined || Date.now() > options.giveUpAt()) return { kinds };
    // Backs off a little (up to 1 s): a down dependency is asked ~once a second per client.
    await sleep(Math.min(1_000, 100 * 2 ** Math.min(tries, 4)));
  }
}
