import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
let key: string;

beforeAll(async () => {
  // Limits off so requests reach the handlers instead of stopping at 429.
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  server = await buildServer(env.app);
  await server.ready();
  const account = await createAccount(env.app, { handle: 'fuzz_target' });
  key = (await createApiKey(env.app.apiKeys, account.id)).key;
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

const ROUTES = [
  ['POST', '/api/v1/accounts'],
  ['GET', '/api/v1/me'],
  ['POST', '/api/v1/posts'],
  ['POST', '/api/v1/send'],
  ['GET', '/api/v1/me/transactions'],
  ['GET', '/api/v1/payments/:anything'],
  ['POST', '/api/v1/posts/:anything/repost'],
  ['POST', '/api/v1/posts/:anything/like'],
  ['DELETE', '/api/v1/posts/:anything/like'],
  ['PATCH', '/api/v1/me/profile'],
  ['GET', '/api/v1/users/:handle'],
  ['POST', '/api/v1/users/:handle/follow'],
  ['DELETE', '/api/v1/users/:handle/follow'],
  ['GET', '/api/v1/me/earnings?from=:anything&to=2026-02-01T00:00:00Z&granularity=day'],
  ['GET', '/api/v1/me/earnings?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&timezone=:anything'],
  ['GET', '/api/v1/me/earnings?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&group_by=:anything'],
  ['GET', '/api/v1/me/posts/earnings?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&cursor=:anything'],
  ['GET', '/api/v1/me/posts/earnings?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&limit=:anything'],
  ['GET', '/api/v1/me/audience?from=2026-01-01T00:00:00Z&to=:anything'],
  ['POST', '/api/v1/reports/:anything/file-link'],
  ['GET', '/api/v1/reports/:anything/file?expires=1&signature=00'],
  ['GET', '/api/v1/:anything'],
] as const;

const pathValue = fc.oneof(
  fc.constantFrom('fuzz_target', '@fuzz_target', 'nobody', '%00', '..', '%2F', '@', ''),
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
);

const body = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 200 }),
  fc
    .record(
      {
        handle: fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.integer(),
          fc.constant(null),
          fc.stringMatching(/^[a-z0-9_]{3,20}$/),
        ),
        display_name: fc.oneof(fc.string({ maxLength: 60 }), fc.array(fc.string()), fc.boolean()),
        bio: fc.oneof(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.object()),
      },
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value)),
);

const authorization = fc.oneof(
  fc.constant(undefined),
  { arbitrary: fc.constant('valid'), weight: 6 },
  fc.constantFrom('Bearer', 'Bearer ', 'bearer lf_live_x', 'Basic Zm9vOmJhcg=='),
  fc.string({ maxLength: 100 }).map((s) => `Bearer ${s}`),
  fc.string({ maxLength: 60 }).filter((s) => !/[\r\n]/.test(s)),
);

const contentType = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/json; charset=latin1',
    '*/*',
  ),
  fc.string({ maxLength: 40 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
);

test(
  'random bodies, headers and path values at every route never yield a 5xx',
  { timeout: 120_000 },
  async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        pathValue,
        body,
        authorization,
        contentType,
        async ([method, template], value, payload, auth, type) => {
          const url = template.replace(/:(handle|anything)/, encodeURIComponent(value));
          const headers: Record<string, string> = {};
          if (auth !== undefined) headers.authorization = auth === 'valid' ? `Bearer ${key}` : auth;
          if (type !== undefined) headers['content-type'] = type;
          const response = await server.inject({ method, url, headers, payload });
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
          expect(
            response.statusCode,
            `${method} ${url} -> ${response.statusCode} ${response.body}`,
          ).toBeLessThan(500);
          const json = JSON.parse(response.body) as Record<string, unknown>;
          if (response.statusCode >= 400) {
            expect(Object.keys(json).sort()).toEqual(['error', 'message']);
            expect(response.body).not.toMatch(/at \S+\.(ts|js):\d+/);
          }
        },
      ),
      { numRuns: 800 },
    );
    // Most runs must get past authentication, or the property says little about the handlers.
    const passedAuth = [...statuses].filter(([status]) => status !== 401).reduce((sum, [, n]) => sum + n, 0);
    expect(passedAuth).toBeGreaterThan(400);
  },
);
