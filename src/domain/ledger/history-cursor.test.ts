import { describe, expect, test } from 'vitest';
import { AppError } from '../errors.js';
import { decodeHistoryCursor, encodeHistoryCursor, type HistoryPosition } from './history-cursor.js';

const SECRET = 'test-secret';
const ACCOUNT = '0b6c5a0e-8d52-4c8e-9d0e-2f1f4b7c9a11';
const position: HistoryPosition = {
  createdAt: '2026-11-22T10:11:12.123456Z',
  movementId: '5f0e8a52-3c1d-4b6e-9a7f-0c2d4e6f8a9b',
};

function refused(run: () => unknown, field = 'cursor') {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: 'invalid_request', details: { field } });
    return;
  }
  throw new Error('expected the cursor to be refused');
}

/** `text` with the character at `at` replaced by another base64url character. */
const flip = (text: string, at: number) =>
  `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;

describe('history cursor', () => {
  test('round-trips its position, microseconds included', () => {
    const cursor = encodeHistoryCursor(SECRET, ACCOUNT, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(decodeHistoryCursor(SECRET, ACCOUNT, cursor)).toEqual(position);
  });

  test('refuses any changed character, including padding bits of the last one', () => {
    const cursor = encodeHistoryCursor(SECRET, ACCOUNT, position);
    for (let at = 0; at < cursor.length; at++) {
      if (cursor[at] === '.') continue;
      refused(() => decodeHistoryCursor(SECRET, ACCOUNT, flip(cursor, at)));
    }
  });

  test('refuses a cursor issued for another account or under another secret', () => {
    const cursor = encodeHistoryCursor(SECRET, ACCOUNT, position);
    refused(() => decodeHistoryCursor(SECRET, '9c0f6a1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b', cursor));
    refused(() => decodeHistoryCursor('another-secret', ACCOUNT, cursor));
  });

  test.each(['', '.', 'garbage', 'a.b.c', 'not base64!.x', `${'A'.repeat(10)}.${'A'.repeat(22)}`])(
    'refuses the garbled cursor %j',
    (cursor) => refused(() => decodeHistoryCursor(SECRET, ACCOUNT, cursor)),
  );

  test('refuses a correctly signed payload that is not a position (the default secret is public)', () => {
    for (const createdAt of ['2026-02-30T00:00:00.000000Z', '0000-01-01T00:00:00.000000Z', 'yesterday']) {
      const cursor = encodeHistoryCursor(SECRET, ACCOUNT, { ...position, createdAt });
      refused(() => decodeHistoryCursor(SECRET, ACCOUNT, cursor));
    }
    const cursor = encodeHistoryCursor(SECRET, ACCOUNT, { ...position, movementId: "x'; DROP TABLE posts" });
    refused(() => decodeHistoryCursor(SECRET, ACCOUNT, cursor));
  });

  test('names the field the transport calls it', () => {
    refused(() => decodeHistoryCursor(SECRET, ACCOUNT, 'garbage', 'after'), 'after');
  });
});
