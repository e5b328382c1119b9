/**
 * Every failure the client reports: an error answer of the API (REST's `{ error, message }`, or a
 * GraphQL error's `extensions.code` and message), a refused webhook signature, or a request that
 * never got an answer (`status` 0, `error` "network_error", "timeout" or "aborted"). One class, so a caller has one
 * `instanceof` and one `switch (err.error)`.
 */
export class LedgerfeedError extends Error {
  override readonly name = 'LedgerfeedError';

  constructor(
    /** The HTTP status (0 when no answer came; 400 for a refused webhook). */
    readonly status: number,
    /** The machine-readable code: REST's `error` ("insufficient_funds"), GraphQL's `extensions.code`. */
    readonly error: string,
    message: string,
    /** What else the answer said: REST's whole body, or the GraphQL error's extensions. */
    readonly details: Record<string, unknown> = {},
    /** Seconds the server asked to wait (`Retry-After`), when it did. */
    readonly retryAfterSec?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The error of a non-2xx REST answer: its JSON `{ error, message }`, or the status when not JSON. */
  static async fromResponse(response: Response): Promise<LedgerfeedError> {
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        body = parsed as Record<string, unknown>;
    } catch {
      // Not JSON (a proxy's error page): the status says what there is to say.
    }
    const error = typeof body.error === 'string' ? body.error : `http_${response.status}`;
    const message =
      typeof body.message === 'string' ? body.message : `${response.status} ${response.statusText}`.trim();
    return new LedgerfeedError(response.status, error, message, body, retryAfterSeconds(response.headers));
  }
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(headers: Headers, now: number = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
