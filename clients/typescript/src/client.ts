import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TadaDocumentNode } from 'gql.tada';
import { print } from 'graphql';
import createFetchClient, { type Client } from 'openapi-fetch';
import { LedgerfeedError, retryAfterSeconds } from './errors.js';
import type { paths } from './generated/openapi.js';
import { graphql, resendOf } from './graphql.js';
import { connectionPage, eachItem } from './pages.js';
import { restResend } from './rest-paid.js';
import { createTransport, type RetryPolicy } from './transport.js';

export interface ClientOptions {
  /** The service's origin, e.g. http://localhost:3000 (paths carry /api/v1). */
  baseUrl: string;
  /** `lf_live_...`: sent as `Authorization: Bearer`. Omit for the unauthenticated calls (open an account). */
  apiKey?: string;
  /**
   * Defaults: 3 retries, Retry-After waited up to 60 s, network-error backoff from 250 ms, an
   * attempt given up after 30 s without an answer.
   */
  retry?: Partial<RetryPolicy>;
  /** The fetch to send with (a proxy's, a test's). Default: the global fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** Makes each paid write's Idempotency-Key. Default: a random UUID. */
  newIdempotencyKey?: () => string;
}

/** A paid write's own options: a key of the caller's (to retry across processes), an abort signal. */
export interface PaidWriteOptions {
  idempotencyKey?: string;
  signal?: AbortSignal;
}

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Op<P extends keyof paths, M extends keyof paths[P]> = paths[P][M];
type Body<P extends keyof paths, M extends keyof paths[P]> =
  Op<P, M> extends { requestBody?: infer R } ? Json<NonNullable<R>> : never;
type Answer<P extends keyof paths, M extends keyof paths[P], S extends number> =
  Op<P, M> extends { responses: infer R } ? (S extends keyof R ? Json<R[S]> : never) : never;

export type Post = Answer<'/api/v1/posts/{id}', 'get', 200>;
export type FeedPost = Answer<'/api/v1/feed', 'get', 200>['posts'][number];
export type NewPost = Body<'/api/v1/posts', 'post'>;
export type PaidPost = Answer<'/api/v1/posts', 'post', 201 | 202>;
export type NewSend = Body<'/api/v1/send', 'post'>;
export type Payment = Answer<'/api/v1/payments/{swap_tx}', 'get', 200>;
export type Transaction = Answer<'/api/v1/me/transactions', 'get', 200>['transactions'][number];
export type AccountEvent = Answer<'/api/v1/events', 'get', 200>['events'][number];
export type ReconciliationReport = Answer<'/api/v1/finance/reconciliation', 'get', 200>;
export type FeedSort = NonNullable<NonNullable<Op<'/api/v1/feed', 'get'>['parameters']['query']>['sort']>;

const FOLLOWERS = graphql(`
  query Followers($handle: String!, $first: Int, $after: String) {
    user(handle: $handle) {
      followers(first: $first, after: $after) {
        edges {
          node {
            handle
            displayName
            walletAddress
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

const RECONCILIATION_EXCEPTIONS = graphql(`
  query ReconciliationExceptions($day: String, $status: ReconciliationStatus, $first: Int, $after: String) {
    reconciliationExceptions(day: $day, status: $status, first: $first, after: $after) {
      edges {
        node {
          movementId
          signature
          day
          status
          commitment
          ledgerAmountUsdMicro
          chainAmountUsdMicro
          detail
          checkedAt
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

/**
 * A client of one Ledgerfeed service. `rest` is the generated, typed REST client (openapi-fetch,
 * one method per HTTP verb: `rest.GET('/api/v1/feed', { params: { query: { limit: '20' } } })`);
 * `graphql` sends a document typed by `graphql()`. Both share what the generators cannot know:
 * the API key, an Idempotency-Key on every paid write reused on each retry, retries on 429 after
 * `Retry-After` (and on network errors and 503 where a resend is safe), and errors thrown as a
 * LedgerfeedError. The other methods are the common calls written once on top.
 */
export function createLedgerfeedClient(options: ClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const transport = createTransport({
    apiKey: options.apiKey,
    fetch: options.fetch ?? ((request) => fetch(request)),
    retry: {
      maxRetries: 3,
      maxRetryAfterSec: 60,
      backoffMs: 250,
      attemptTimeoutMs: 30_000,
      ...options.retry,
    },
    newIdempotencyKey: options.newIdempotencyKey ?? randomUUID,
  });

  const rest: Client<paths> = createFetchClient<paths>({
    baseUrl,
    fetch: async (request) => {
      const response = await transport.send(request, restResend(request));
      if (!response.ok) throw await LedgerfeedError.fromResponse(response);
      return response;
    },
  });

  async function sendGraphql<Result, Variables>(
    document: TadaDocumentNode<Result, Variables>,
    variables: Variables,
    init: PaidWriteOptions = {},
  ): Promise<Result> {
    const request = new Request(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: print(document), variables }),
      signal: init.signal,
    });
    if (init.idempotencyKey !== undefined) request.headers.set('idempotency-key', init.idempotencyKey);
    const response = await transport.send(request, resendOf(document));
    const text = await response.text();
    let answer: {
      data?: Result | null;
      errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    };
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      throw new LedgerfeedError(
        response.status,
        `http_${response.status}`,
        text.slice(0, 200) || response.statusText,
      );
    }
    const first = answer.errors?.[0];
    if (first) {
      const code = typeof first.extensions?.code === 'string' ? first.extensions.code : 'graphql_error';
      throw new LedgerfeedError(
        response.status,
        code,
        first.message,
        first.extensions ?? {},
        retryAfterSeconds(response.headers),
      );
    }
    if (!response.ok || answer.data == null) {
      throw new LedgerfeedError(response.status, `http_${response.status}`, 'no data in the GraphQL answer');
    }
    return answer.data;
  }

  /** A paid REST write with the caller's own key and signal, when given. */
  const paidInit = (init: PaidWriteOptions) => ({
    headers: init.idempotencyKey === undefined ? {} : { 'idempotency-key': init.idempotencyKey },
    signal: init.signal,
  });

  /** One payment by its swap_tx, with its state (pending, confirmed, finalized, failed). */
  async function payment(swapTx: string): Promise<Payment> {
    const { data } = await rest.GET('/api/v1/payments/{swap_tx}', { params: { path: { swap_tx: swapTx } } });
    return data!;
  }

  return {
    rest,
    graphql: sendGraphql,
    payment,

    /** Pays $1 and publishes a post, reply or quote; retried safely (one key, one charge). */
    async createPost(post: NewPost, init: PaidWriteOptions = {}): Promise<PaidPost> {
      const { data } = await rest.POST('/api/v1/posts', { body: post, ...paidInit(init) });
      return data!;
    },

    /** Pays $1 and reposts `postId`. */
    async repost(postId: string, init: PaidWriteOptions = {}) {
      const { data } = await rest.POST('/api/v1/posts/{id}/repost', {
        params: { path: { id: postId } },
        ...paidInit(init),
      });
      return data!;
    },

    /** Sends USDC to another account. */
    async send(send: NewSend, init: PaidWriteOptions = {}) {
      const { data } = await rest.POST('/api/v1/send', { body: send, ...paidInit(init) });
      return data!;
    },

    async waitForPayment(
      swapTx: string,
      {
        until = 'finalized',
        timeoutMs = 60_000,
        pollMs = 1_000,
        onState,
      }: {
        until?: 'confirmed' | 'finalized';
        timeoutMs?: number;
        pollMs?: number;
        /** Called with the payment each time its state changes (the first look included). */
        onState?: (payment: Payment) => void;
      } = {},
    ): Promise<Payment> {
      const deadline = Date.now() + timeoutMs;
      let seen: Payment['status'] | undefined;
      for (;;) {
        const current = await payment(swapTx);
        if (current.status !== seen) onState?.(current);
        seen = current.status;
        if (current.status === 'failed') {
          throw new LedgerfeedError(200, 'payment_failed', `payment ${swapTx} failed on chain`, {
            payment: current,
          });
        }
        if (current.status === 'finalized' || (until === 'confirmed' && current.status === 'confirmed'))
          return current;
        if (Date.now() + pollMs > deadline) {
          throw new LedgerfeedError(
            0,
            'timeout',
            `payment ${swapTx} is still ${current.status} after ${timeoutMs} ms`,
            { payment: current },
          );
        }
        await sleep(pollMs);
      }
    },

    /** Every post of the feed, page after page (`latest` newest first, or `trending`). */
    feed({ sort, limit }: { sort?: FeedSort; limit?: number } = {}): AsyncGenerator<FeedPost> {
      return eachItem(async (cursor) => {
        const { data } = await rest.GET('/api/v1/feed', {
          params: { query: { sort, limit: text(limit), cursor } },
        });
        return { items: data!.posts, next: data!.next_cursor, hasMore: data!.has_more };
      });
    },

    /** Every post of one account's timeline, newest first. */
    userPosts(handle: string, { limit }: { limit?: number } = {}) {
      return eachItem(async (cursor) => {
        const { data } = await rest.GET('/api/v1/users/{handle}/posts', {
          params: { path: { handle }, query: { limit: text(limit), cursor } },
        });
        return { items: data!.posts, next: data!.next_cursor, hasMore: data!.has_more };
      });
    },

    /** The caller's money history, newest first. */
    transactions({ limit }: { limit?: number } = {}): AsyncGenerator<Transaction> {
      return eachItem(async (cursor) => {
        const { data } = await rest.GET('/api/v1/me/transactions', {
          params: { query: { limit: text(limit), cursor } },
        });
        return { items: data!.transactions, next: data!.next_cursor, hasMore: data!.has_more };
      });
    },

    /** The caller's event log, oldest first, from `after` (a cursor: an event's sequence). */
    events({ after, limit }: { after?: string; limit?: number } = {}): AsyncGenerator<AccountEvent> {
      return eachItem(async (cursor) => {
        const { data } = await rest.GET('/api/v1/events', {
          params: { query: { after: cursor ?? after, limit: text(limit) } },
        });
        return { items: data!.events, next: data!.next_cursor, hasMore: data!.has_more };
      });
    },

    /** The accounts following `handle`, newest follow first (GraphQL). */
    followers(handle: string, { first = 50 }: { first?: number } = {}) {
      return eachItem(async (after) => {
        const data = await sendGraphql(FOLLOWERS, { handle, first, after });
        if (!data.user) throw new LedgerfeedError(404, 'not_found', `no account @${handle}`);
        return connectionPage(data.user.followers);
      });
    },

    /** A day's reconciliation report (finance role): payments by state and the verdicts' counts. */
    async reconciliation(date: string): Promise<ReconciliationReport> {
      const { data } = await rest.GET('/api/v1/finance/reconciliation', {
        params: { query: { date } },
        headers: { accept: 'application/json' },
      });
      // Asked for JSON: the answer is the JSON report (the CSV is the other type of this 200).
      return data as ReconciliationReport;
    },

    /** Every reconciliation exception (finance role), of one ledger day when `day` is given (GraphQL). */
    reconciliationExceptions({ day, first = 100 }: { day?: string; first?: number } = {}) {
      return eachItem(async (after) => {
        const data = await sendGraphql(RECONCILIATION_EXCEPTIONS, { day, first, after });
        return connectionPage(data.reconciliationExceptions);
      });
    },
  };
}

/** A query parameter's text: the REST API reads every query value as a string. */
const text = (n: number | undefined) => (n === undefined ? undefined : String(n));

export type LedgerfeedClient = ReturnType<typeof createLedgerfeedClient>;
