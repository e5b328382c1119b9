import type { ClickHouseTarget } from '../adapters/clickhouse/index.js';

/** Where one backing service answers, and how it was found (shown in the start-up summary and /healthz). */
export interface ServiceEndpoint {
  readonly url: string;
  /** 'external', 'embedded', 'shared' or 'local': a label only, the app connects the same way. */
  readonly source: string;
}

/**
 * The backing services as the composition root receives them: plain URLs and labels, resolved
 * before the app opens (by src/devstack for `npm start`, tests and the CLI, or by a deployment's
 * environment). The app never starts, stops or inspects a server.
 */
export interface ServiceEndpoints {
  readonly postgres: ServiceEndpoint;
  readonly redis: ServiceEndpoint;
  readonly solana: ServiceEndpoint & { readonly wsUrl: string };
  /** Undefined for a process that needs no ClickHouse (CLI commands beside a running service). */
  readonly clickhouse: ClickHouseTarget | undefined;
}
