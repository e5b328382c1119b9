import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import type { ApiDeps } from '../../app/api-deps.js';
import type { StreamSlots } from '../stream-slots.js';
import { eventCursor, eventPage, followEvents } from '../../app/events/account-events.js';
import { EVENT_TYPES } from '../../domain/events/event-types.js';
import { authErrors, errorBody } from './schemas.js';

const cursorDescription =
  'An event cursor: the `sequence` of the last event seen (a next_cursor), as digits; omit for the start of the kept log (30 days)';

const eventQuery = {
  type: 'object',
  properties: {
    after: { type: 'string', description: cursorDescription },
    limit: { type: 'string', description: 'Integer from 1 to 100; default 50' },
  },
} as const;

export const accountEventSchema = {
  type: 'object',
  required: ['id', 'type', 'created_at', 'sequence', 'data'],
  properties: {
    id: { type: 'string', description: '`evt_` and 32 hex digits: what a receiver dedupes by' },
    type: { type: 'string', enum: [...EVENT_TYPES] },
    created_at: { type: 'string', format: 'date-time', description: 'When the change committed' },
    sequence: {
      type: 'integer',
      description: 'Strictly increasing per account, 1, 2, 3, ... with no gap: the order of the log',
    },
    data: {
      type: 'object',
      additionalProperties: true,
      description:
        'payment.*: swap_tx, kind (the history’s type), amount_usd (signed), related_post_id, counterparty, slot; post.replied/quoted/reposted: post_id, reply_id/quote_id/repost_id, by; post.liked: post_id, by; follow.created: by; send.received: from, amount_usd, memo, swap_tx; reconciliation.exception: swap_tx, verdict and the amounts; report.succeeded: id, type, status, row_count, sha256, file_url; report.failed: id, type, status, error; period.closed: period, timezone, status, closed_at; period.reopened: period, timezone, status, reopened_at, reopened_by',
    },
  },
} as const;

const eventPageSchema = {
  type: 'object',
  required: ['events', 'has_more', 'next_cursor'],
  properties: {
    events: { type: 'array', items: accountEventSchema },
    has_more: { type: 'boolean' },
    next_cursor: {
      type: 'string',
      description: 'Ask with after=next_cursor for what follows; on an empty page, the cursor given',
    },
  },
} as const;

/**
 * The stream's 200, for the document only: the route hijacks the reply and writes the events
 * itself, so no serializer ever sees it.
 */
const eventStream = {
  description:
    'Server-sent events: one per logged event, `id:` its sequence, `event:` its type, `data:` the event as GET /events lists it (JSON); comment lines keep the connection alive',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string',
        examples: [
          'id: 7\nevent: post.liked\ndata: {"id":"evt_…","type":"post.liked","created_at":"2026-11-28T02:30:00.000Z","sequence":7,"data":{"post_id":"…","by":"bob"}}\n\n',
        ],
      },
    },
  },
} as const;

/** A comment line now and then keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/**
 * GET /events: the caller's event log, oldest first, paged by cursor; pages never skip or repeat
 * an event while new ones arrive. GET /events/stream: the same log as server-sent events from
 * `after` or the `Last-Event-ID` a reconnecting EventSource sends, then each new event as it is
 * numbered: a stream that resumes where it broke, unlike the GraphQL post subscriptions. Scope
 * `read`, bucket `read`; a stream counts toward the streams an account may hold (5, with its
 * GraphQL subscriptions) and is cut when its key is revoked.
 */
export function registerEventRoutes(api: FastifyInstance, deps: ApiDeps, streams: StreamSlots): void {
  typedRoutes(api).get(
    '/events',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listEvents',
        summary: 'The caller’s event log (oldest first): payments, engagement, follows, sends received',
        tags: ['events'],
        querystring: eventQuery,
        response: { 200: eventPageSchema, 400: errorBody, ...authErrors },
      },
    },
    async (request) => {
      const page = await eventPage(deps, request.viewer!.accountId, request.query);
      return { events: page.events, has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );

  typedRoutes(api).get(
    '/events/stream',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'streamEvents',
        summary:
          'The caller’s event log as server-sent events (id: the sequence), from `after` or Last-Event-ID, then live',
        tags: ['events'],
        querystring: {
          type: 'object',
          properties: { after: { type: 'string', description: cursorDescription } },
        },
        response: { 200: eventStream, 400: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      // Checked before the stream opens: a bad cursor is a JSON 400, not a broken stream.
      const lastEventId = request.headers['last-event-id'];
      // Sent twice, the header is an array: the first counts.
      const after = eventCursor(
        (Array.isArray(lastEventId) ? lastEventId[0] : lastEventId) ?? request.query.after,
      );
      const accountId = request.viewer!.accountId;
      const raw = reply.raw;
      // Counted with the account's GraphQL subscriptions, and cut when its key is revoked or its
      // client stops reading. Takes no slot when the client already left.
      const refused = streams.hold({ accountId, authorization: request.headers.authorization ?? '' }, raw);
      if (refused) throw refused;
      reply.hijack();
      const stop = new AbortController();
      raw.once('close', () => stop.abort());
      // A client that reset its connection while its key and rate limit were checked: its 'close'
      // came before the listener above, so nothing would ever stop a follower started now.
      if (raw.destroyed) return;
      raw.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      raw.write(': events of this account; reconnect with Last-Event-ID to resume\n\n');
      // A stream whose client is not reading needs no keep-alive, and must not grow its buffer.
      const heartbeat = setInterval(() => {
        if (!raw.writableNeedDrain) raw.write(': keep-alive\n\n');
      }, HEARTBEAT_MS);
      try {
        for await (const event of followEvents(deps, accountId, after, stop.signal)) {
          const frame = `id: ${event.sequence}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
          // Backpressure: the next event is read only once the client took this one, so a client
          // that never reads holds one page of events here, not the whole kept log. One that reads
          // nothing for STUCK_STREAM_MS is cut (stream slots), which closes `raw` and aborts the wait
          // (an AbortError, ended quietly below).
          if (!raw.write(frame)) await once(raw, 'drain', { signal: stop.signal });
          if (stop.signal.aborted) break;
        }
      } catch (error) {
        if (!stop.signal.aborted) request.log.warn({ err: error }, 'event stream ended by an error');
      } finally {
        clearInterval(heartbeat);
        raw.end();
      }
    },
  );
}
