import type { ServerResponse } from 'node:http';
import type { AppError } from '../domain/errors.js';

/**
 * Slots for long-lived streams, per account: GraphQL subscriptions and REST's GET /events/stream
 * share them (src/api/graphql/live-streams.ts keeps them), so an account holds at most a few open
 * streams whichever transport it uses, and a revoked key's streams end.
 */
export interface StreamSlots {
  /**
   * Takes a slot for `raw` until it closes: counted toward the account's maximum, cut when its
   * key is revoked, when its client has read nothing for STUCK_STREAM_MS while its answer waits,
   * or when the server closes. Answers the refusal when the account holds its maximum. A `raw`
   * already destroyed (its client left while it was admitted) takes no slot: the caller must check
   * `raw.destroyed` after this and stream nothing.
   */
  hold(owner: { accountId: string; authorization: string }, raw: ServerResponse): AppError | undefined;
}
