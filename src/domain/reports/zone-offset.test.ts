import { expect, test } from 'vitest';
import { zoneOffsetMs } from './zone-offset.js';

const HOUR = 3_600_000;

test('zoneOffsetMs() follows daylight saving and half-hour zones', () => {
  expect(zoneOffsetMs(Date.parse('2026-11-28T12:00:00Z'), 'America/Los_Angeles')).toBe(-8 * HOUR);
  expect(zoneOffsetMs(Date.parse('2026-07-01T12:00:00Z'), 'America/Los_Angeles')).toBe(-7 * HOUR);
  expect(zoneOffsetMs(Date.parse('2026-11-28T12:00:00Z'), 'Asia/Kolkata')).toBe(5.5 * HOUR);
  expect(zoneOffsetMs(Date.parse('2026-11-28T12:00:00Z'), 'UTC')).toBe(0);
});

test('zoneOffsetMs() changes at the switch, not an hour off (Europe/Paris, 2026-10-25 01:00 UTC)', () => {
  expect(zoneOffsetMs(Date.parse('2026-10-25T00:59:59Z'), 'Europe/Paris')).toBe(2 * HOUR);
  expect(zoneOffsetMs(Date.parse('2026-10-25T01:00:00Z'), 'Europe/Paris')).toBe(1 * HOUR);
});

test('zoneOffsetMs() ignores the milliseconds of the instant', () => {
  expect(zoneOffsetMs(Date.parse('2026-11-28T12:00:00.999Z'), 'Asia/Tokyo')).toBe(9 * HOUR);
});
