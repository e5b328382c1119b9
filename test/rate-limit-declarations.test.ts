import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import { graphqlSchema } from '../src/api/graphql/graphql-schema.js';
import { openApiDocument } from '../src/api/openapi.js';
import { requireRateLimit } from '../src/api/rest/routes.js';
import { RATE_LIMITS } from '../src/domain/rate-limits/rate-limit-policy.js';

/**
 * Rate limits are declared, not remembered: every mutation and subscription field names its
 * bucket (the type checker refuses one that does not; the schema carries it in
 * `extensions.rateLimit`), queries spend by their cost once per operation, and every /api/v1
 * route names its bucket or the server does not start.
 */
describe('every root field and route declares its rate limit', () => {
  const buckets = Object.keys(RATE_LIMITS);

  test('GraphQL: each mutation and subscription field names a known bucket', () => {
    const schema = graphqlSchema();
    const declared: Record<string, unknown> = {};
    for (const type of [schema.getMutationType(), schema.getSubscriptionType()]) {
      for (const field of Object.values(type!.getFields())) {
        declared[`${type!.name}.${field.name}`] = field.extensions.rateLimit;
      }
    }
    expect(Object.keys(declared).length).toBeGreaterThanOrEqual(14);
    const undeclared = Object.entries(declared).filter(([, bucket]) => !buckets.includes(bucket as string));
    expect(undeclared).toEqual([]);
    expect(declared['Mutation.createPost']).toBe('post');
    expect(declared['Mutation.send']).toBe('send');
    expect(declared['Subscription.postCreated']).toBe('read');
  });

  test('REST: the server builds (every route declares one); a route without one is refused', async () => {
    await expect(openApiDocument()).resolves.toBeTruthy();
    const app = Fastify();
    app.addHook('onRoute', requireRateLimit);
    expect(() => app.get('/forgot', () => ({}))).toThrow(
      /GET \/forgot: every \/api\/v1 route declares config.bucket/,
    );
    expect(() => app.get('/declared', { config: { bucket: 'read' } }, () => ({}))).not.toThrow();
    await app.close();
  });
});
