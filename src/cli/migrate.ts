import { openApp } from '../app/wiring.js';
import { readConfig } from '../config/index.js';
import { startDevstack } from '../devstack/index.js';
import { createLogger } from '../logger.js';

/** `npm run migrate`: applies pending Postgres and ClickHouse migrations, then exits. */
const config = readConfig();
const logger = createLogger(config);
const stack = await startDevstack(config, { persistent: true });
const app = openApp(config, logger, stack);
try {
  const applied = await app.migrate();
  const all = [
    ...applied.postgres.map((m) => `postgres ${m}`),
    ...applied.clickhouse.map((m) => `clickhouse ${m}`),
  ];
  console.log(all.length === 0 ? 'Everything is up to date.' : `Applied:\n  ${all.join('\n  ')}`);
} finally {
  await app.close();
  await stack.stop();
}
