import pg from 'pg';
import { expect, test } from 'vitest';
import { toErrorResponse } from '../src/api/error-response.js';
import { freePort } from '../src/devstack/free-port.js';

/*
 * Found by `npm run chaos` (Postgres kill -9): while the postmaster was down or in crash recovery,
 * paid writes answered 500 {"error":"internal"} (80 in one short run). A backing service that is
 * restarting is a 503 the careful client retries with its Idempotency-Key.
 */
const unavailable = {
  status: 503,
  body: { error: 'unavailable', message: 'A backing service is unavailable; try again shortly' },
};

test('a refused connection to Postgres answers 503 unavailable, naming no address', async () => {
  const client = new pg.Client({ host: '127.0.0.1', port: await freePort(), user: 'x', password: 'x' });
  const error = await client.connect().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect((error as { code?: string }).code).toBe('ECONNREFUSED');
  expect(toErrorResponse(error)).toEqual(unavailable);
});

test("a backend ended by the postmaster's crash (57P01) or by crash recovery (57P03) answers 503", () => {
  for (const code of ['57P01', '57P03', '08006']) {
    const error = new pg.DatabaseError(
      'terminating connection due to unexpected postmaster exit',
      0,
      'error',
    );
    error.code = code;
    expect(toErrorResponse(error)).toEqual(unavailable);
  }
  expect(toErrorResponse(new Error('Connection terminated unexpectedly'))).toEqual(unavailable);
});

test('any other unexpected error stays a 500 without detail', () => {
  const error = new pg.DatabaseError('relation "posts" does not exist', 0, 'error');
  error.code = '42P01';
  expect(toErrorResponse(error)).toEqual({
    status: 500,
    body: { error: 'internal', message: 'Internal server error' },
  });
  expect(toErrorResponse(new TypeError('x is undefined')).status).toBe(500);
});
