/**
 * The health probe's round trip: resolves once the cluster's JSON-RPC answers `getHealth` with
 * `ok`, rejects otherwise. A plain request of its own, not through the RpcClient: the client's rate
 * pacing (limitRate) would make the probe wait behind the process's own chain traffic.
 */
export async function pingSolana(rpcUrl: string): Promise<void> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth' }),
  });
  const body = (await response.json()) as { result?: string; error?: { message: string } };
  if (body.result !== 'ok')
    throw new Error(body.error?.message ?? `getHealth answered ${JSON.stringify(body)}`);
}
