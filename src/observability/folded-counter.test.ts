import { Registry } from 'prom-client';
import { expect, test } from 'vitest';
import { FoldedCounter } from './folded-counter.js';

test('hits are folded into the counter when it is read, and it only grows', async () => {
  const registry = new Registry();
  const counter = new FoldedCounter({
    name: 'hits_total',
    help: 'hits',
    labelName: 'route',
    registers: [registry],
  });
  counter.hit('/a');
  counter.hit('/a');
  counter.hit('/b');
  expect((await counter.get()).values).toEqual([
    { value: 2, labels: { route: '/a' } },
    { value: 1, labels: { route: '/b' } },
  ]);
  counter.hit('/a');
  // A scrape folds the new hit in; reading again adds nothing twice.
  expect(await registry.metrics()).toContain('hits_total{route="/a"} 3');
  expect((await counter.get()).values.find((v) => v.labels.route === '/a')?.value).toBe(3);
});
