const wallClocks = new Map<string, Intl.DateTimeFormat>();

/**
 * How far `timezone`'s wall clock is ahead of UTC at the instant `at` (ms since the epoch; whole
 * seconds: the wall clock has no milliseconds). One formatter per zone is kept: making one costs
 * far more than using it, and report files ask for every row's offset.
 */
export function zoneOffsetMs(at: number, timezone: string): number {
  let wallClock = wallClocks.get(timezone);
  if (!wallClock) {
    wallClock = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    wallClocks.set(timezone, wallClock);
  }
  const field: Record<string, number> = {};
  for (const part of wallClock.formatToParts(at)) {
    if (part.type !== 'literal') field[part.type] = Number(part.value);
  }
  const asUtc = Date.UTC(
    field.year ?? 1970,
    (field.month ?? 1) - 1,
    field.day ?? 1,
    field.hour ?? 0,
    field.minute ?? 0,
    field.second ?? 0,
  );
  return asUtc - Math.floor(at / 1000) * 1000;
}
