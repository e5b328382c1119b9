import type { PlatformChain, RpcClient } from '../../adapters/solana/index.js';
import { AppError } from '../../domain/errors.js';
import type { PoolReserves } from '../../domain/swap/constant-product.js';

/**
 * The swap pool's reserves, read from chain: the balances of its two vaults (the pool authority's
 * USDC and native token accounts), in one batched RPC call. `processed` by default: the swap step
 * waits for each swap to be executed (processed) before the next one reads, so that is the
 * commitment at which the previous swap is already in the reserves.
 */
export async function readPoolReserves(
  rpc: RpcClient,
  platform: PlatformChain,
  commitment: 'processed' | 'confirmed' = 'processed',
): Promise<PoolReserves> {
  const answers = await rpc.batch<{ value: { amount: string } }>(
    [platform.poolNativeVault, platform.poolUsdcVault].map((vault) => ({
      method: 'getTokenAccountBalance',
      params: [vault.toBase58(), { commitment }],
    })),
  );
  const [native, usdc] = answers.map((answer) => {
    if ('error' in answer)
      throw new AppError('unavailable', 'The swap pool cannot be read right now; try again');
    return BigInt(answer.result.value.amount);
  });
  return { nativeUnits: native!, usdcMicro: usdc! };
}
