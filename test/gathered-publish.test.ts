import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { gatheredPublisher, PUBLISH_GATHER_MS } from '../src/adapters/redis/gathered-publish.js';
import { createRedis } from '../src/adapters/redis/index.js';

/**
 * Publishes of a few milliseconds go to Redis together: fewer socket writes on the API's event
 * loop, every message still delivered, in order, and each caller told whether Redis took it.
 */
let publisher: Redis;
let subscriber: Redis;
const channel = `gathered-${randomUUID()}`;
const heard: string[] = [];

beforeAll(async () => {
  publisher = createRedis(inject('redisUrl'), 'client');
  subscriber = createRedis(inject('redisUrl'), 'client');
  subscriber.on('message', (_channel: string, message: string) => heard.push(message));
  await subscriber.subscribe(channel);
});
afterAll(() => {
  publisher.disconnect();
  subscriber.disconnect();
});

/** Counts what the publisher sends to Redis: each pipeline and each lone command is one write. */
function counted(redis: Redis) {
  const sent = { pipelines: 0, lone: 0 };
  const proxy = new Proxy(redis, {
    get(target, key, receiver) {
      if (key === 'pipeline') sent.pipelines++;
      if (key === 'publish') sent.lone++;
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
  return { redis: proxy, sent };
}

async function heardAll(n: number) {
  const deadline = Date.now() + 5_000;
  while (heard.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

test('publishes of one gathering go as one pipeline, delivered in order, each resolved once Redis took it', async () => {
  heard.length = 0;
  const { redis, sent } = counted(publisher);
  const gathered = gatheredPublisher(redis);
  const messages = Array.from({ length: 20 }, (_, i) => `m${i}`);
  await Promise.all(messages.map((m) => gathered.publish(channel, m)));
  expect(sent).toEqual({ pipelines: 1, lone: 0 });
  await heardAll(messages.length);
  expect(heard).toEqual(messages);
});

test('a publish alone is sent alone after the gathering time; later publishes start a new gathering', async () => {
  heard.length = 0;
  const { redis, sent } = counted(publisher);
  const gathered = gatheredPublisher(redis);
  const started = performance.now();
  await gathered.publish(channel, 'first');
  expect(performance.now() - started).toBeGreaterThanOrEqual(PUBLISH_GATHER_MS - 1);
  expect(sent).toEqual({ pipelines: 0, lone: 1 });
  await Promise.all([gathered.publish(channel, 'second'), gathered.publish(channel, 'third')]);
  expect(sent).toEqual({ pipelines: 1, lone: 1 });
  await heardAll(3);
  expect(heard).toEqual(['first', 'second', 'third']);
});

test('flush sends at once; every publish of a gathering Redis did not take is rejected', async () => {
  const gone = createRedis(inject('redisUrl'), 'client');
  await gone.ping();
  const gathered = gatheredPublisher(gone, 60_000);
  const pending = [gathered.publish(channel, 'lost 1'), gathered.publish(channel, 'lost 2')];
  gone.disconnect();
  void gathered.flush();
  const outcomes = await Promise.allSettled(pending);
  expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
});
