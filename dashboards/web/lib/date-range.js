/*
 * Date ranges read in an IANA time zone, for the creator page's picker (and the report panels'
 * day boundaries). A range is [from, to): instants, each the local start of an hour, day or month
 * in the zone, so the API's buckets (which start at local hours, midnights, Mondays and 1sts) line
 * up with it. Days travel as YYYY-MM-DD strings and are stepped in UTC calendar arithmetic, which
 * has no DST; only turning a local day into an instant looks at the zone.
 */

const HOUR_MS = 3_600_000;

/** The browser's IANA time zone, the default wherever a page reads days. */
export function browserTimeZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** Whether the browser knows `timeZone` as an IANA name. */
export function isTimeZone(timeZone) {
  if (!timeZone) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

function wallParts(instant, timeZone) {
  return Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(instant)
      .map((part) => [part.type, part.value]),
  );
}

/** Offset of `timeZone` from UTC at `instant` (ms; positive east of Greenwich). */
function offsetMs(instant, timeZone) {
  const parts = wallParts(instant, timeZone);
  const wall = Date.UTC(+parts.year, +parts.month - 1, +parts.day, +parts.hour, +parts.minute, +parts.second);
  return wall - Math.floor(instant / 1000) * 1000;
}

/** The instant a local wall-clock time (ms as if UTC) happens in `timeZone`. */
function instantOfWall(wall, timeZone) {
  // Twice: the offset at the first guess can differ from the offset at the answer (a DST change).
  const guess = wall - offsetMs(wall, timeZone);
  return new Date(wall - offsetMs(guess, timeZone));
}

/** The instant a local day (YYYY-MM-DD) starts in `timeZone` (throws RangeError for an unknown zone). */
export function dayStartIn(day, timeZone) {
  const [y, m, d] = day.split('-').map(Number);
  return instantOfWall(Date.UTC(y, m - 1, d), timeZone);
}

/** The local day (YYYY-MM-DD) `instant` falls on in `timeZone`. */
export function localDay(instant, timeZone) {
  const parts = wallParts(instant instanceof Date ? instant.getTime() : instant, timeZone);
  return `${parts.year}-${parts.month}-${parts.day}`;
}

const ymd = (date) => date.toISOString().slice(0, 10);
const utcOf = (day) => {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d));
};

/** `day` plus `n` calendar days (n may be negative). */
export function addDays(day, n) {
  const date = utcOf(day);
  date.setUTCDate(date.getUTCDate() + n);
  return ymd(date);
}

/** The 1st of `day`'s month plus `n` months. */
function monthStart(day, n = 0) {
  const date = utcOf(day);
  return ymd(new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + n, 1)));
}

/** Calendar days from `from` to `to` (YYYY-MM-DD each). */
function daysBetween(from, to) {
  return Math.round((utcOf(to).getTime() - utcOf(from).getTime()) / 86_400_000);
}

/** The ranges the picker offers, in its order. `days`: the local days the range covers. */
export const PRESETS = [
  { id: '24h', label: '24 h', long: 'the last 24 hours' },
  { id: '7d', label: '7 d', long: 'the last 7 days', days: 7 },
  { id: '30d', label: '30 d', long: 'the last 30 days', days: 30 },
  { id: '90d', label: '90 d', long: 'the last 90 days', days: 90 },
  { id: '12m', label: '12 months', long: 'the last 12 months' },
  { id: 'custom', label: 'Custom', long: 'the chosen days' },
];
export const DEFAULT_PRESET = '30d';

/**
 * A custom range's bucket by its length in days, within the API's bounds (creatorEarnings: HOUR
 * up to 31 days, DAY 400, WEEK and MONTH 5 years): about 24 to 100 bars wherever it can.
 */
export function granularityForDays(days) {
  if (days <= 2) return 'HOUR';
  if (days <= 92) return 'DAY';
  if (days <= 366) return 'WEEK';
  return 'MONTH';
}

const DAY_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/**
 * What a choice ({ preset, timezone, from?, to? }: custom days YYYY-MM-DD, `to` included) means:
 * { from, to } instants ([from, to)), the granularity, the local first day and the text to show.
 * Throws an Error (with `field`: 'timezone', 'from' or 'to') saying what to fix.
 *   24 h       the 24 local hours up to the end of the current one, per hour
 *   7/30/90 d  that many local days up to the end of today, per day
 *   12 months  the current local month and the 11 before it, per month
 *   custom     local midnight of `from` to the end of `to`, the bucket by length
 */
export function resolveRange(choice, now = new Date()) {
  const { preset, timezone } = choice;
  if (!isTimeZone(timezone)) {
    throw Object.assign(
      new Error(`Unknown time zone "${timezone}": use an IANA name such as Europe/Paris.`),
      {
        field: 'timezone',
      },
    );
  }
  const today = localDay(now, timezone);
  if (preset === '24h') {
    const wall = now.getTime() + offsetMs(now.getTime(), timezone);
    const to = instantOfWall(Math.floor(wall / HOUR_MS) * HOUR_MS + HOUR_MS, timezone);
    const from = new Date(to.getTime() - 24 * HOUR_MS);
    return { ...choice, from, to, granularity: 'HOUR', firstDay: localDay(from, timezone) };
  }
  const fixed = PRESETS.find((p) => p.id === preset && p.days);
  if (fixed) {
    const firstDay = addDays(today, 1 - fixed.days);
    return {
      ...choice,
      from: dayStartIn(firstDay, timezone),
      to: dayStartIn(addDays(today, 1), timezone),
      granularity: 'DAY',
      firstDay,
    };
  }
  if (preset === '12m') {
    const firstDay = monthStart(today, -11);
    return {
      ...choice,
      from: dayStartIn(firstDay, timezone),
      to: dayStartIn(monthStart(today, 1), timezone),
      granularity: 'MONTH',
      firstDay,
    };
  }
  if (preset === 'custom') {
    if (!DAY_PATTERN.test(choice.from ?? ''))
      throw Object.assign(new Error('Choose the first day.'), { field: 'from' });
    if (!DAY_PATTERN.test(choice.to ?? ''))
      throw Object.assign(new Error('Choose the last day.'), { field: 'to' });
    const days = daysBetween(choice.from, choice.to) + 1;
    if (days < 1)
      throw Object.assign(new Error('The last day must not be before the first.'), { field: 'to' });
    return {
      ...choice,
      from: dayStartIn(choice.from, timezone),
      to: dayStartIn(addDays(choice.to, 1), timezone),
      granularity: granularityForDays(days),
      firstDay: choice.from,
    };
  }
  throw Object.assign(new Error(`Unknown range "${preset}".`), { field: 'preset' });
}

/**
 * The start of every bucket of `range` (ms), oldest first, so a chart shows quiet buckets as
 * zeros: local hours, midnights, Mondays or 1sts, the first on or before `from`, as the API counts.
 */
export function bucketStarts(range) {
  const { from, to, granularity, timezone, firstDay } = range;
  const end = to.getTime();
  const starts = [];
  if (granularity === 'HOUR') {
    for (let t = from.getTime(); t < end; t += HOUR_MS) starts.push(t);
    return starts;
  }
  let day = firstDay;
  if (granularity === 'WEEK') day = addDays(day, -((utcOf(day).getUTCDay() + 6) % 7));
  if (granularity === 'MONTH') day = monthStart(day);
  const step = (d) =>
    granularity === 'DAY' ? addDays(d, 1) : granularity === 'WEEK' ? addDays(d, 7) : monthStart(d, 1);
  for (
    let t = dayStartIn(day, timezone).getTime();
    t < end;
    day = step(day), t = dayStartIn(day, timezone).getTime()
  )
    starts.push(t);
  return starts;
}

/** A choice read from the page's address (`?range=30d&tz=…`, custom with `&from=&to=`), or the defaults. */
export function choiceFromQuery(search, fallbackZone = browserTimeZone()) {
  const query = new URLSearchParams(search);
  const preset = PRESETS.some((p) => p.id === query.get('range')) ? query.get('range') : DEFAULT_PRESET;
  const choice = { preset, timezone: query.get('tz') || fallbackZone };
  if (preset === 'custom') {
    choice.from = query.get('from') ?? '';
    choice.to = query.get('to') ?? '';
  }
  return choice;
}

/** The address query of a choice, for history.replaceState (a reload keeps the range). */
export function choiceToQuery(choice) {
  const query = new URLSearchParams({ range: choice.preset, tz: choice.timezone });
  if (choice.preset === 'custom') {
    query.set('from', choice.from ?? '');
    query.set('to', choice.to ?? '');
  }
  return `?${query}`;
}

const UNIT = { HOUR: 'hour', DAY: 'day', WEEK: 'week', MONTH: 'month' };

/** "1 Nov 2026, 00:00 – 1 Dec 2026, 00:00 (Asia/Kolkata), per day": [from, to) as the zone reads it. */
export function rangeText(range) {
  const format = new Intl.DateTimeFormat(undefined, {
    timeZone: range.timezone,
    dateStyle: 'medium',
    timeStyle: 'short',
  });
  return `${format.format(range.from)} – ${format.format(range.to)} (${range.timezone}), per ${UNIT[range.granularity]}`;
}

/** The bucket's unit in words ("hour"). */
export const unitOf = (granularity) => UNIT[granularity];
