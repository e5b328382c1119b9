/** The most endpoints one account may register (the API's limit). */
export const ENDPOINTS_PER_ACCOUNT = 5;

/**
 * `count` webhook endpoints registered through POST /api/v1/webhooks, ENDPOINTS_PER_ACCOUNT per
 * owner in the order given (so `count` needs count / 5 owners), every event type, each at its own
 * path of the local receiver: http://127.0.0.1:<port>/hook/<n>. Their ids and their owners' keys.
 */
export async function registerEndpoints(
  base: string,
  ownerKeys: readonly string[],
  count: number,
  port: number,
): Promise<Array<{ id: string; key: string }>> {
  if (ownerKeys.length * ENDPOINTS_PER_ACCOUNT < count) {
    throw new Error(`${count} endpoints need ${Math.ceil(count / ENDPOINTS_PER_ACCOUNT)} accounts`);
  }
  const endpoints: Array<{ id: string; key: string }> = [];
  for (let n = 0; n < count; n++) {
    const key = ownerKeys[Math.floor(n / ENDPOINTS_PER_ACCOUNT)]!;
    const response = await fetch(`${base}/api/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook/${n}` }),
    });
    if (response.status !== 201) {
      throw new Error(`registering endpoint ${n}: ${response.status} ${await response.text()}`);
    }
    endpoints.push({ id: ((await response.json()) as { id: string }).id, key });
  }
  return endpoints;
}
