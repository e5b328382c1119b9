import type { FastifyInstance } from 'fastify';
import type { PlatformChain } from '../../src/adapters/solana/index.js';
import { buildServer } from '../../src/api/server.js';
import type { Account } from '../../src/domain/accounts/account.js';
import { createAccount } from '../../src/domain/accounts/accounts.service.js';
import type { Scope } from '../../src/domain/auth/api-key.js';
import { createApiKey } from '../../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../../workers/processors.js';
import type { RunningRole } from '../../workers/role.js';
import { startWorkerRole } from '../../workers/worker.role.js';
import { depositUsdc } from './deposit.js';
import { openTestEnv, type TestEnv } from './test-env.js';

/** A funded account with an API key. */
export interface Member {
  account: Account;
  key: string;
  /** Signature of the USDC transfer that funded the account, if any. */
  depositTx?: string;
}

export interface ServiceHarness {
  env: TestEnv;
  platform: PlatformChain;
  /** http://127.0.0.1:<port> of the REST and GraphQL server. */
  base: string;
  /** A new account with a key (all scopes unless given), funded on chain and in the ledger. */
  member(handle: string, usdMicro: bigint, scopes?: Scope[]): Promise<Member>;
  /** A REST call under /api/v1 as `who` (JSON body when given). */
  call(
    who: Member,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /** As `call`, but `text` is sent verbatim as the JSON body (for JSON no serializer writes, e.g. `1e-7`). */
  callRaw(
    who: Member,
    method: string,
    path: string,
    text: string,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /** A GraphQL operation as `who` (with `headers` added to the request). */
  gql(
    who: Member,
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<{ data?: any; errors?: any[] }>;
  close(): Promise<void>;
}

/**
 * The whole write path of one test file: its own stack (database, Redis prefix, ClickHouse
 * database, in-memory localnet), the REST+GraphQL server on a free port and the worker role with
 * every processor, as `npm start` runs them.
 */
export async function openServiceHarness(
  overrides: Record<string, string> = {},
  options: { localnetDir?: string; slotMs?: number } = {},
): Promise<ServiceHarness> {
  const env = await openTestEnv(overrides, { chain: true, ...options });
  let server: FastifyInstance | undefined;
  let worker: RunningRole | undefined;
  const close = async () => {
    await worker?.stop();
    await server?.close();
    await env.close();
  };
  try {
    const platform = await env.app.bootstrapChain();
    server = await buildServer(env.app);
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    worker = await startWorkerRole(env.app, processorsFor(env.app));
    const headersOf = (who: Member, extra: Record<string, string> = {}) => ({
      authorization: `Bearer ${who.key}`,
      ...extra,
    });
    const rest = (
      who: Member,
      method: string,
      path: string,
      text: string | undefined,
      headers: Record<string, string> = {},
    ) =>
      fetch(`${base}/api/v1${path}`, {
        method,
        headers: headersOf(who, {
          ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        }),
        ...(text === undefined ? {} : { body: text }),
      });
    return {
      env,
      platform,
      base,
      member: async (handle, usdMicro, scopes) => {
        const account = await createAccount(env.app, { handle });
        const { key } = await createApiKey(env.app.apiKeys, account.id, scopes);
        if (usdMicro === 0n) return { account, key };
        return { account, key, depositTx: await depositUsdc(env.app, platform, account, usdMicro) };
      },
      call: (who, method, path, body, headers) =>
        rest(who, method, path, body === undefined ? undefined : JSON.stringify(body), headers),
      callRaw: (who, method, path, text, headers) => rest(who, method, path, text, headers),
      gql: async (who, query, variables = {}, headers = {}) => {
        const response = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: headersOf(who, {
            'content-type': 'application/json',
            accept: 'application/graphql-response+json',
            ...headers,
          }),
          body: JSON.stringify({ query, variables }),
        });
        return (await response.json()) as { data?: any; errors?: any[] };
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
