import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../src/observability/metrics.js';

/**
 * What compose promises operations, checked against the code (no Docker here): every service has a
 * healthcheck, Prometheus scrapes every app role on the port it serves /metrics on, and the
 * operations dashboard asks only for metrics the service exports.
 */
interface Service {
  build?: unknown;
  healthcheck?: { test?: unknown };
  environment?: Record<string, unknown>;
}
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const prometheus = parse(readFileSync('dashboards/prometheus/prometheus.yml', 'utf8')) as {
  scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
};

describe('compose for operations', () => {
  test('every service has a healthcheck', () => {
    const without = Object.entries(compose.services)
      .filter(([, service]) => service.healthcheck?.test === undefined)
      .map(([name]) => name);
    expect(without).toEqual([]);
  });

  test('Prometheus scrapes every app role where it serves /metrics (PORT for the api, else HEALTH_PORT)', () => {
    const targets = prometheus.scrape_configs.flatMap((job) => job.static_configs.flatMap((c) => c.targets));
    const roles = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);
    expect(roles.length).toBe(3);
    for (const [name, service] of roles) {
      const env = service.environment ?? {};
      const port = name === 'api' ? env.PORT : env.HEALTH_PORT;
      expect(targets, name).toContain(`${name}:${String(port)}`);
    }
  });

  test('the operations dashboard queries only metrics the service exports', async () => {
    const dashboard = JSON.parse(readFileSync('dashboards/grafana/dashboards/operations.json', 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const exported = new Set(
      (await createMetrics().registry.getMetricsAsJSON()).flatMap((metric) =>
        String(metric.type) === 'histogram'
          ? [`${metric.name}_bucket`, `${metric.name}_count`, `${metric.name}_sum`]
          : [metric.name],
      ),
    );
    const queried = dashboard.panels.flatMap((panel) =>
      panel.targets.flatMap((target) => target.expr.match(/ledgerfeed_[a-z_]+/g) ?? []),
    );
    expect(queried.length).toBeGreaterThanOrEqual(9);
    expect(queried.filter((name) => !exported.has(name))).toEqual([]);
  });
});
