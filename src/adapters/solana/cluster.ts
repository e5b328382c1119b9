import type { RpcClient } from './rpc-client.js';

/** Genesis hashes of the public clusters. */
const PUBLIC_CLUSTERS: Readonly<Record<string, 'mainnet-beta' | 'devnet' | 'testnet'>> = {
  '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d': 'mainnet-beta',
  EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG: 'devnet',
  '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY': 'testnet',
};

export type Cluster = 'mainnet-beta' | 'devnet' | 'testnet' | 'localnet' | 'local-validator';

/**
 * Which cluster an RPC serves: the public ones by genesis hash; our embedded localnet by its
 * `localnet_getInfo` method; anything else is a private validator (docker compose).
 */
export async function detectCluster(rpc: RpcClient): Promise<Cluster> {
  const genesis = await rpc.call<string>('getGenesisHash', []);
  const known = PUBLIC_CLUSTERS[genesis];
  if (known) return known;
  try {
    await rpc.call('localnet_getInfo', []);
    return 'localnet';
  } catch {
    return 'local-validator';
  }
}

/** How hard the service may drive a cluster's RPC. */
export interface RpcPacing {
  /** Status poll of every transaction in flight, in ms. */
  pollMs: number;
  /** Poll of the transactions a client waits on (at `processed`), in ms. */
  processedPollMs: number;
  /** HTTP requests per second at most; 0 for no cap. */
  maxRequestsPerSecond: number;
  /**
   * The node executes a transaction as it receives it (our embedded localnet), so the statuses
   * asked in the same request as the send already say `processed` (see the signature watcher's
   * lookOnSend). A real validator lands it in a later slot: there the look would find nothing.
   */
  lookOnSend: boolean;
}

/**
 * Defaults per cluster, each overridable (SOLANA_POLL_MS, SOLANA_MAX_RPS): our own validators take
 * a 100 ms poll (10 ms for a transaction a client waits on) and no cap; public RPCs allow about 100 requests per 10 s per IP (devnet, testnet), so the
 * service polls once a second and stays under 8 requests a second there.
 */
export function rpcPacingFor(
  cluster: Cluster,
  overrides: { pollMs?: number; maxRequestsPerSecond?: number } = {},
): RpcPacing {
  const ours = cluster === 'localnet' || cluster === 'local-validator';
  const pollMs = overrides.pollMs ?? (ours ? 100 : 1_000);
  return {
    pollMs,
    processedPollMs: Math.min(pollMs, ours ? 10 : 400),
    maxRequestsPerSecond: overrides.maxRequestsPerSecond ?? (ours ? 0 : 8),
    lookOnSend: cluster === 'localnet',
  };
}

/**
 * Compute-unit price (micro-lamports) of every platform transaction. None on our own validators,
 * which never congest; 1,000 on devnet and testnet (1,000 lamports per million compute units: a
 * transfer budgeted at 200,000 pays 200 lamports more), so a busy public cluster still schedules ours.
 */
export function priorityFeeFor(cluster: Cluster, override?: number): number {
  if (override !== undefined) return override;
  return cluster === 'localnet' || cluster === 'local-validator' ? 0 : 1_000;
}
