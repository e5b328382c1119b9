import { rest } from './api.js';
import { dayStartIn } from './date-range.js';
import { el } from './ui.js';

// The zone helpers live in date-range.js (the creator page's range picker uses them too).
export { browserTimeZone, dayStartIn } from './date-range.js';

/*
 * Report runs from the pages (REST /api/v1/reports, docs/reports.md): ask for a run with an
 * Idempotency-Key, follow it until it succeeds or fails, and download its file through a
 * short-lived signed link, which the browser's download manager streams to disk (a file of
 * gigabytes never passes through the page); the page shows the run's sha256 and size for the
 * person to check the saved file against. Shared by the finance page's Reports and Periods panels
 * and the creator page's Statements.
 */

/**
 * How far before the browser's clock an interval that reaches into the future is cut: the API
 * refuses an `interval_end` later than the request's time by its own clock, and the two clocks
 * are not the same clock.
 */
const CLOCK_MARGIN_MS = 5_000;

/**
 * What to send as `interval_end` for a local end day (exclusive) in `timeZone`: the day itself
 * (the API reads it in the timezone), or, when that day starts after now, now (to the second, less
 * the clock margin): "up to now". A zone the browser does not know is sent as typed, for the API to
 * refuse by name.
 */
export function intervalEndFor(day, timeZone, now = new Date()) {
  let start;
  try {
    start = dayStartIn(day, timeZone);
  } catch {
    return day;
  }
  const latest = Math.floor((now.getTime() - CLOCK_MARGIN_MS) / 1000) * 1000;
  return start.getTime() <= latest ? day : new Date(latest).toISOString();
}

/** 128 random bits as hex. getRandomValues, not randomUUID: the page may be served over plain HTTP. */
function newIdempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `report-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * Asks for report runs, one Idempotency-Key per intended run. `ask(intended, makeBody)`: while
 * `intended` (what the person chose, as a string) is the same as the last ask's and that ask got no
 * answer (a lost connection, a 5xx, the key still busy), the same body is sent again with the same
 * key, so the server answers the first request instead of starting a second run; the body is made
 * once, since it can hold "now". Two asks at once share one request. The key is dropped once the
 * API answers with a run or refuses the request (4xx: nothing was started); an edit of the form
 * calls `forget()`.
 */
export function reportRequester() {
  let intent = null;
  const forget = () => {
    intent = null;
  };
  async function send(mine) {
    try {
      const response = await rest('POST', '/reports', {
        body: mine.body,
        headers: { 'idempotency-key': mine.key },
      });
      const run = await response.json();
      if (intent === mine) intent = null;
      return run;
    } catch (error) {
      const nothingStarted = error.status >= 400 && error.status < 500 && error.status !== 409;
      if (intent === mine && nothingStarted) intent = null;
      throw error;
    } finally {
      mine.pending = null;
    }
  }
  function ask(intended, makeBody) {
    if (!intent || intent.intended !== intended) {
      intent = { intended, body: makeBody(), key: newIdempotencyKey(), pending: null };
    }
    const mine = intent;
    mine.pending ??= send(mine);
    return mine.pending;
  }
  return { ask, forget };
}

export const FINAL_STATUSES = new Set(['succeeded', 'failed']);
/** How a run or a closing period is followed: each second for 15 s, then every 3 s, 15 minutes at most. */
const FOLLOW_FAST_MS = 15_000;
const FOLLOW_MAX_MS = 15 * 60_000;

/**
 * The pause before the next read of something followed since `started` (Date.now()): a second for
 * 15 s, then 3 s. Answers false at once, without waiting, once 15 minutes have passed.
 */
export async function nextFollowRead(started) {
  const elapsed = Date.now() - started;
  if (elapsed >= FOLLOW_MAX_MS) return false;
  await new Promise((resolve) => setTimeout(resolve, elapsed < FOLLOW_FAST_MS ? 1_000 : 3_000));
  return true;
}

/**
 * Follows a run (GET /reports/{id}) until it has succeeded or failed; `onUpdate(run, problem)` is
 * called with each answer, or with the last run and the error of a read that failed (the next tick
 * tries again). Stops early when `stillWanted()` turns false (another run took the panel) and
 * after 15 minutes; answers the last run read. A 404 is thrown (the run is not this key's).
 */
export async function followRun(run, { onUpdate, stillWanted = () => true }) {
  const started = Date.now();
  let last = run;
  while (!FINAL_STATUSES.has(last.status)) {
    if (!stillWanted() || !(await nextFollowRead(started))) return last;
    if (!stillWanted()) return last;
    try {
      last = await (await rest('GET', `/reports/${encodeURIComponent(run.id)}`)).json();
      onUpdate(last, null);
    } catch (error) {
      if (error.status === 404) throw error;
      onUpdate(last, error);
    }
  }
  return last;
}

/**
 * Downloads a succeeded run's file without holding it: asks for a download link (POST
 * /reports/{id}/file-link, with the API key; valid a few minutes, for this run only) and navigates
 * a hidden `<a download>` to it, so the browser saves the file as it arrives. The file's name is
 * the server's (Content-Disposition). Answers the link's expiry; an API refusal (404, 409) is thrown.
 */
export async function downloadRunFile(run) {
  const link = await (await rest('POST', `/reports/${encodeURIComponent(run.id)}/file-link`)).json();
  if (!link.url?.startsWith('/api/v1/')) throw new Error(`Not a file of this API: ${link.url}`);
  const anchor = el('a', { href: link.url, download: '', hidden: true, rel: 'noreferrer' });
  document.body.append(anchor);
  try {
    anchor.click();
  } finally {
    // The navigation has started: the link (a credential until it expires) leaves the page.
    anchor.remove();
  }
  return { expiresAt: link.expires_at };
}

/**
 * What a download through a link tells the person: the browser is saving the file, and the sha256
 * and size the saved file must have (the page cannot hash a file it never held).
 */
export function savedFileFacts(run, idPrefix) {
  return el('p', { role: 'status', id: `${idPrefix}-saved`, 'data-report-id': run.id }, [
    `Your browser is saving the file (${byteSize(run.bytes)}). Its sha256 must be `,
    el('code', { id: `${idPrefix}-saved-sha256`, class: 'mono' }, run.sha256),
    el(
      'span',
      { class: 'muted' },
      ' (check with sha256sum, shasum -a 256 or Get-FileHash -Algorithm SHA256; a file that differs is not the run’s).',
    ),
  ]);
}

/** A size in bytes as people read it ("12.3 kB"), decimal units. */
export function byteSize(bytes) {
  const n = Number(bytes);
  if (n < 1000) return `${n} byte${n === 1 ? '' : 's'}`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** An instant the API answered, as a date and time in the run's own timezone. */
export function inZone(iso, timeZone) {
  try {
    return new Intl.DateTimeFormat(undefined, { timeZone, dateStyle: 'medium', timeStyle: 'short' }).format(
      new Date(iso),
    );
  } catch {
    return iso;
  }
}

/** "1 Nov 2026, 00:00 – 1 Dec 2026, 00:00 (Europe/Paris)": a run's interval, end exclusive. */
export function intervalText(run) {
  return `${inZone(run.interval_start, run.timezone)} – ${inZone(run.interval_end, run.timezone)} (${run.timezone})`;
}

const STATUS_TONES = { pending: 'pending', running: 'pending', succeeded: 'good', failed: 'bad' };

/** A run's status as a badge. */
export function statusBadge(status) {
  return el('span', { class: `badge ${STATUS_TONES[status] ?? ''}`.trim(), 'data-status': status }, status);
}

/**
 * What a succeeded run's file is: rows, size, sha256, and the summary's opening and closing per
 * currency when the run has one (balance.summary, account.statement).
 */
export function runFacts(run, idPrefix) {
  const cell = (id, label, value, { wide = false, mono = false } = {}) =>
    el('div', { class: wide ? 'wide' : null }, [
      el('dt', {}, label),
      el('dd', { id: `${idPrefix}-${id}`, class: mono ? 'mono' : null }, value),
    ]);
  return [
    el('dl', { class: 'quote report-facts' }, [
      cell('rows', 'Rows', Number(run.row_count).toLocaleString()),
      cell('bytes', 'Size', el('span', { title: `${run.bytes} bytes` }, byteSize(run.bytes))),
      cell('sha256', 'sha256', run.sha256, { wide: true, mono: true }),
    ]),
    run.summary?.length
      ? el('div', { class: 'table-wrap' }, [
          el('table', { id: `${idPrefix}-summary` }, [
            el(
              'caption',
              {},
              run.type === 'account.statement'
                ? 'Opening and closing balance over the interval'
                : 'The platform accounts’ opening and closing over the interval',
            ),
            el(
              'thead',
              {},
              el('tr', {}, [
                el('th', { scope: 'col' }, 'Currency'),
                el('th', { scope: 'col', class: 'num' }, 'Opening'),
                el('th', { scope: 'col', class: 'num' }, 'Closing'),
              ]),
            ),
            el(
              'tbody',
              {},
              run.summary.map((line) =>
                el('tr', { 'data-currency': line.currency }, [
                  el('td', {}, line.currency),
                  el('td', { class: 'num' }, line.opening),
                  el('td', { class: 'num' }, line.closing),
                ]),
              ),
            ),
          ]),
        ])
      : null,
  ];
}
