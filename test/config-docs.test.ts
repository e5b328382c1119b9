import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { envSchema } from '../src/config/index.js';

const known = Object.keys(envSchema.shape).sort();

describe('every environment variable is known and documented', () => {
  test('docker-compose.yml sets only variables the config schema knows', () => {
    const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, unknown>; build?: unknown }>;
    };
    const appServices = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);
    expect(appServices.map(([name]) => name).sort()).toEqual(['api', 'indexer', 'worker']);
    for (const [name, service] of appServices) {
      const names = Object.keys(service.environment ?? {});
      expect(names.length, `${name} sets no variables`).toBeGreaterThan(0);
      for (const variable of names) expect(known, `${name} sets ${variable}`).toContain(variable);
    }
  });

  test("the README's configuration table lists exactly the variables of the config schema", () => {
    const table = readFileSync('README.md', 'utf8');
    const documented = [...table.matchAll(/^\| `([A-Z0-9_]+)` +\|/gm)].map((m) => m[1]).sort();
    expect(documented).toEqual(known);
  });
});
