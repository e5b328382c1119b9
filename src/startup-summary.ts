import path from 'node:path';
import type { RunningService } from './service.js';
import { redactUrl } from './url-redaction.js';

/**
 * The block `npm start` prints: where everything is, and what backs it. Every backing URL is
 * redacted: a terminal's scroll-back and a container's log keep it, and an RPC provider's URL
 * carries its key.
 */
export function startupSummary(service: RunningService): string {
  const { stack, config } = service.app;
  const rel = (p: string) => path.relative(process.cwd(), p) || '.';
  const rows: Array<[string, string]> = [];
  if (service.apiUrl) {
    rows.push(['REST', `${service.apiUrl}/api/v1`]);
    rows.push(['GraphQL', `${service.apiUrl}/graphql`]);
    rows.push(['Health', `${service.apiUrl}/healthz`]);
    rows.push(['Metrics', `${service.apiUrl}/metrics`]);
    rows.push(['Dashboards', `${service.apiUrl}/dashboard/ (queues: /admin/queues, an admin's full key)`]);
  }
  if (service.healthUrl) {
    rows.push(['Health', `${service.healthUrl}/healthz`]);
    rows.push(['Metrics', `${service.healthUrl}/metrics`]);
  }
  rows.push(['Postgres', `${stack.postgres.source.padEnd(9)}${redactUrl(stack.postgres.url)}`]);
  rows.push(['Redis', `${stack.redis.source.padEnd(9)}${redactUrl(stack.redis.url)}`]);
  const clickhouse = stack.clickhouse;
  if (!clickhouse) {
    rows.push(['ClickHouse', `${'none'.padEnd(9)}analytics answer 503 (set CLICKHOUSE_URL to serve them)`]);
  } else {
    rows.push([
      'ClickHouse',
      clickhouse.kind === 'chdb'
        ? `${'embedded'.padEnd(9)}chdb in ${rel(clickhouse.path)} (database ${config.CLICKHOUSE_DATABASE})`
        : `${'external'.padEnd(9)}${redactUrl(clickhouse.url)} (database ${config.CLICKHOUSE_DATABASE})`,
    ]);
  }
  rows.push([
    'Solana',
    `${stack.solana.source.padEnd(9)}${redactUrl(stack.solana.url)} (WebSocket ${redactUrl(stack.solana.wsUrl)})`,
  ]);
  const { platform } = service;
  rows.push(['Cluster', platform.cluster]);
  // Where we mint, our USDC is a test token and says so: nobody should take it for Circle's.
  rows.push([
    'USDC mint',
    `${platform.usdcMint.toBase58()}${platform.mintsTestTokens ? ' (our own test USDC; the dev faucet mints it)' : ''}`,
  ]);
  rows.push(['Native mint', `${platform.nativeMint.toBase58()} (${platform.nativeDecimals} decimals)`]);
  rows.push(['Fee payer', platform.signers.fee_payer.publicKey.toBase58()]);
  rows.push(['Treasury', platform.signers.treasury.publicKey.toBase58()]);
  for (const role of service.roles) {
    if (role.name !== 'api') rows.push([`${role.name} role`, role.summary.join('; ')]);
  }
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    `Ledgerfeed is running (roles: ${service.roles.map((r) => r.name).join(', ')}; data in ${rel(config.dataDir)})`,
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
    'Press Ctrl-C to stop.',
  ].join('\n');
}
