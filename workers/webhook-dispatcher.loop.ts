import type { HostResolver } from '../src/adapters/http/webhook-address.js';
import { createWebhookSender } from '../src/adapters/http/webhook-sender.js';
import type { App } from '../src/app/wiring.js';
import {
  DISPATCH_POLL_MS,
  startWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherOptions,
} from '../src/app/webhooks/deliver-webhooks.js';

export { DISPATCH_POLL_MS };

/** Sent with every delivery, so a receiver's logs say who called. */
export const WEBHOOK_USER_AGENT = 'Ledgerfeed-Webhooks/1.0';

/**
 * The webhook dispatcher of the worker role (deliverWebhooks): claims endpoints with events due,
 * delivers each endpoint's events in order, and looks again every DISPATCH_POLL_MS or at once when
 * woken (`wake`, called when the event sequencer of this process has numbered new events). Several
 * workers may run it at once: endpoints are leased in Postgres, one dispatcher each.
 */
export function startWebhookDispatcherLoop(
  app: App,
  options: WebhookDispatcherOptions & { resolve?: HostResolver } = {},
): WebhookDispatcher {
  const { resolve, ...dispatcherOptions } = options;
  const log = app.logger.child({ role: 'worker', loop: 'webhook-dispatcher' });
  const sender = createWebhookSender({
    // The registration's policy (WEBHOOK_ALLOW_LOOPBACK, NODE_ENV), checked again before each delivery.
    policy: app.webhookUrlPolicy,
    userAgent: WEBHOOK_USER_AGENT,
    ...(resolve ? { resolve } : {}),
  });
  return startWebhookDispatcher(
    {
      db: app.db,
      sender,
      logger: log,
      retryWindowMs: app.config.WEBHOOK_RETRY_WINDOW_MS,
      webhookSecrets: app.webhookSecrets,
      onAttempt: (outcome) => app.metrics.webhookAttempts.inc({ outcome }),
    },
    dispatcherOptions,
  );
}
