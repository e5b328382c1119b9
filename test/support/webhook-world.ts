import { createAccount } from '../../src/domain/accounts/accounts.service.js';
import { ALL_SCOPES } from '../../src/domain/auth/api-key.js';
import { startWebhookDispatcherLoop } from '../../workers/webhook-dispatcher.loop.js';
import { openTestEnv } from './test-env.js';

export interface Owner {
  accountId: string;
  scopes: Set<(typeof ALL_SCOPES)[number]>;
}

/**
 * A test database with the worker role's webhook dispatcher running on it: owners (accounts with
 * every scope, their handles `${handle}_<n>_<env>`), an endpoint's row as stored, and a close that
 * stops the dispatcher before the receivers and the database go.
 */
export async function openWebhookWorld({
  handle,
  env: overrides = {},
  dispatcher: dispatcherOptions = {},
}: {
  handle: string;
  env?: Record<string, string>;
  dispatcher?: Parameters<typeof startWebhookDispatcherLoop>[1];
}) {
  const env = await openTestEnv(overrides);
  const dispatcher = startWebhookDispatcherLoop(env.app, dispatcherOptions);
  let handles = 0;
  return {
    env,
    dispatcher,
    owner: async (): Promise<Owner> => {
      const account = await createAccount(env.app, {
        handle: `${handle}_${++handles}_${env.id.slice(1, 6)}`,
      });
      return { accountId: account.id, scopes: new Set(ALL_SCOPES) };
    },
    endpoint: (endpointId: string) =>
      env.app.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('id', '=', endpointId)
        .executeTakeFirstOrThrow(),
    close: async (receivers: ReadonlyArray<{ close(): Promise<void> }>) => {
      await dispatcher.stop();
      for (const receiver of receivers) await receiver.close();
      await env.close();
    },
  };
}
