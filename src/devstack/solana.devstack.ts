/**
 * The chain seam. A cluster given by SOLANA_RPC_URL is used as is; with it unset the embedded
 * localnet will start here (issue #3). Until then the stack runs without a chain and says so.
 */
export type SolanaTarget =
  | { readonly kind: 'rpc'; readonly rpcUrl: string; readonly wsUrl: string | undefined }
  | { readonly kind: 'none'; readonly reason: string };

export function resolveSolana(rpcUrl: string | undefined, wsUrl: string | undefined): SolanaTarget {
  if (rpcUrl) return { kind: 'rpc', rpcUrl, wsUrl };
  return {
    kind: 'none',
    reason: 'SOLANA_RPC_URL is unset and the embedded localnet is not built yet',
  };
}
