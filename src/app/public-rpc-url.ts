import { redactUrl } from '../url-redaction.js';

/**
 * The RPC URL the dashboards put in block-explorer links, which every dashboard user reads. Set
 * (PUBLIC_RPC_URL), it is the operator's choice; else the service's own RPC URL, with any secret in
 * it hidden: a provider's key in SOLANA_RPC_URL must not reach a creator's browser (the link then
 * needs PUBLIC_RPC_URL to work, which the README says).
 */
export function publicRpcUrlOf(publicRpcUrl: string | undefined, rpcUrl: string): string {
  return publicRpcUrl ?? redactUrl(rpcUrl);
}
