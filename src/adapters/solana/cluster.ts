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
