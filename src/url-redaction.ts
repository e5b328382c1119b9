/**
 * Secrets that travel inside URLs, hidden before a URL is printed (logs, the startup banner, a
 * health report). RPC providers put their key in the query (`?api-key=...`), in the user part or
 * as a path segment (`/v2/<key>`); databases put a password in the user part.
 */
const HIDDEN = '***';

/**
 * A path segment that is likely a credential rather than a route: long, in a token's alphabet,
 * and mixing digits with letters (provider keys are 32-64 such characters; route names are words).
 */
const TOKEN_SEGMENT = /^(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{16,}$/;

/**
 * Query parameters of connection URLs that name places and modes, never credentials: shown as
 * they are (the embedded Postgres is reached through `?host=<socket folder>`). Every other value
 * is hidden, since providers choose their key's name freely (api-key, apikey, token, key, ...).
 */
const PLAIN_QUERY_NAMES = new Set([
  'host',
  'port',
  'sslmode',
  'application_name',
  'dbname',
  'database',
  'cluster',
]);

/** A URL anywhere in free text (an error message, a log line), up to whitespace or a quote. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/**
 * `url` with its password, a user part without a password, every query value (but a few
 * PLAIN_QUERY_NAMES) and every token-like path segment replaced by `***`. Scheme, host, port and route stay readable. Text
 * that does not parse as a URL is returned as it came.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  let hidden = false;
  if (parsed.password) {
    parsed.password = HIDDEN;
    hidden = true;
  } else if (parsed.username) {
    // A user part alone is a token in that position (https://<key>@rpc.example), not a user name.
    parsed.username = HIDDEN;
    hidden = true;
  }
  if ([...parsed.searchParams.keys()].some((name) => !PLAIN_QUERY_NAMES.has(name.toLowerCase()))) {
    parsed.search = [...parsed.searchParams]
      .map(([name, value]) => {
        const shown = PLAIN_QUERY_NAMES.has(name.toLowerCase()) ? encodeURIComponent(value) : HIDDEN;
        return `${encodeURIComponent(name)}=${shown}`;
      })
      .join('&');
    hidden = true;
  }
  const segments = parsed.pathname.split('/');
  if (segments.some((s) => TOKEN_SEGMENT.test(s))) {
    parsed.pathname = segments.map((s) => (TOKEN_SEGMENT.test(s) ? HIDDEN : s)).join('/');
    hidden = true;
  }
  // Nothing secret: the URL exactly as given (toString() would normalise it).
  if (!hidden) return url;
  // URL escapes the asterisks in a path and the user part; show them as written.
  const shown = parsed.toString().replaceAll('%2A%2A%2A', HIDDEN);
  // new URL() adds a trailing slash to a bare origin; keep the caller's form.
  return !url.endsWith('/') && parsed.pathname === '/' && shown.endsWith('/') ? shown.slice(0, -1) : shown;
}

/** `text` with every URL in it redacted (see redactUrl). */
export function redactUrls(text: string): string {
  return text.includes('://') ? text.replace(URL_IN_TEXT, (url) => redactUrl(url)) : text;
}
