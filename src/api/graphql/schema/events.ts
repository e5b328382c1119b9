import { eventCursor, eventPage, followEvents } from '../../../app/events/account-events.js';
import { EVENT_PAGE_MAX } from '../../../domain/events/event-cursor.js';
import type { AccountEvent } from '../../../domain/events/event-types.js';
import { builder } from '../builder.js';

/*
 * The viewer's event log (REST GET /events): what happened to its money, its posts and its
 * follows, in `sequence` order. The query pages it; the subscription resumes from a cursor, so
 * unlike postCreated and postCountsChanged it loses nothing across a disconnect: reconnect with
 * `after` = the last `sequence` handled.
 */

const AccountEventRef = builder.objectRef<AccountEvent>('AccountEvent').implement({
  description: 'One entry of an account’s event log; a webhook delivers the same object as JSON.',
  fields: (t) => ({
    id: t.exposeString('id', { description: '`evt_` and 32 hex digits: what a receiver dedupes by' }),
    type: t.exposeString('type', {
      description:
        'payment.confirmed, payment.finalized, payment.failed, post.replied, post.quoted, post.reposted, post.liked, follow.created, send.received, reconciliation.exception, report.succeeded, report.failed, period.closed, period.reopened',
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (event) => new Date(event.created_at) }),
    sequence: t.exposeInt('sequence', {
      description: 'Strictly increasing per account (1, 2, 3, ... with no gap): the cursor of the log',
    }),
    data: t.field({
      type: 'JSONObject',
      description:
        'The event’s facts, with the REST API’s snake_case names (see the Webhooks and events docs)',
      resolve: (event) => event.data,
    }),
  }),
});

const AccountEventPage = builder
  .objectRef<{ events: AccountEvent[]; hasMore: boolean; nextCursor: string }>('AccountEventPage')
  .implement({
    fields: (t) => ({
      events: t.field({ type: [AccountEventRef], resolve: (page) => page.events }),
      hasMore: t.exposeBoolean('hasMore'),
      nextCursor: t.exposeString('nextCursor', {
        description: 'Ask with after: nextCursor for what follows; on an empty page, the cursor given',
      }),
    }),
  });

builder.queryFields((t) => ({
  events: t.field({
    type: AccountEventPage,
    description: `The viewer's event log, oldest first (REST GET /events): \`after\` an event cursor (a sequence; none: the start of the kept log), \`first\` 1 to ${EVENT_PAGE_MAX}, default 50. Needs \`read\`.`,
    authScopes: { read: true },
    args: { after: t.arg.string(), first: t.arg.int() },
    resolve: (_root, { after, first }, ctx) =>
      eventPage(ctx.deps, ctx.viewer!.accountId, { after, limit: first ?? undefined }),
  }),
}));

builder.subscriptionFields((t) => ({
  events: t.field({
    type: AccountEventRef,
    description:
      'The viewer’s events after `after` (none: from the start of the kept log), then each new one as it happens. Lossless: reconnect with after = the last sequence received and nothing is missed or repeated. Needs `read`.',
    authScopes: { read: true },
    rateLimit: 'read',
    args: { after: t.arg.string() },
    subscribe: (_root, { after }, ctx) => {
      const from = eventCursor(after ?? undefined);
      const stop = new AbortController();
      const events = followEvents(ctx.deps, ctx.viewer!.accountId, from, stop.signal);
      // Ending the subscription stops the wait for the next event at once (an async generator's
      // own return() would wait for it).
      const iterator: AsyncIterableIterator<AccountEvent> = {
        next: () => events.next(),
        return: async () => {
          stop.abort();
          return events.return(undefined);
        },
        throw: (error: unknown) => events.throw(error),
        [Symbol.asyncIterator]: () => iterator,
      };
      return iterator;
    },
    resolve: (event) => event,
  }),
}));
