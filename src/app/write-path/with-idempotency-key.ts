import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Db } from '../../adapters/postgres/db.js';
import { AppError } from '../../domain/errors.js';
import {
  claimKey,
  readKey,
  releaseAfterFailure,
  renewLease,
  storeAnswer,
  takeOverKey,
} from '../../adapters/postgres/idempotency.repository.js';
import { IDEMPOTENCY_KEY_TTL_HOURS, idempotencyLeaseMs, type IdempotencyClaim } from './idempotency-keys.js';

/*
 * Stripe's semantics for an Idempotency-Key on a money-moving request, per account, for every
 * transport (REST's hook and GraphQL's paid mutations call this one implementation): the first
 * request with a key is recorded as in flight before any work; a repeat with the same request gets
 * the first answer (waiting while the first is still in flight); a repeat with another request is
 * refused (idempotency_key_reused) and nothing moves.
 *
 * A request owns its key's row by a random token and a lease (WRITE_TIMEOUT_MS + 5 s, renewed
 * every third of that while it works). A paid write's commit records the resource it created on
 * the row in the same statement, and only while its token still owns the row. A repeat that finds
 * the row unanswered with its lease run out (the owner's process died) takes it over in one
 * statement: if the dead owner's commit recorded a resource, the repeat answers with it without
 * charging again (`claim.resume`); if none was recorded, nothing was charged and the repeat runs
 * the request as the new owner. The dead owner's commit, should it still arrive, fails (409) and
 * commits nothing. A repeat waits for a live owner up to one lease and then answers 409 `in
 * progress`.
 *
 * An answer of status 500 or more is not kept: the row is deleted when no resource was recorded
 * (nothing was charged), and otherwise its lease ends so the next repeat answers from the resource.
 * Keys older than the TTL are reused here and purged by the worker role
 * (workers/idempotency-purge.loop.ts).
 */

export interface IdempotencyDeps {
  db: Db;
  writeTimeoutMs: number;
  logger: Logger;
}

/** One request under a key: whose key, and what a repeat must match to share it. */
export interface KeyedRequest {
  accountId: string;
  key: string;
  /** A digest of everything that makes the request what it is (keyedRequestHash). */
  requestHash: string;
}

/** An answer as kept on the key's row: a status in HTTP's terms and the exact body. */
export interface KeptAnswer {
  status: number;
  body: string | null;
}

/** A key this request now owns: run the request, then `finish` with its answer. */
export interface OwnedKey {
  /** What the paid write runs under (its commit records its resource on the row). */
  claim: IdempotencyClaim;
  /**
   * Keeps the answer for repeats (below 500), or frees the key (500 and above; see above), and
   * stops renewing the lease. A failure to keep it is logged, not thrown: once money has moved the
   * request must still answer, and the next repeat takes the key over from its resource.
   */
  finish(answer: KeptAnswer): Promise<void>;
  /** Stops renewing without an answer (the client went away): the lease then runs out. */
  abandon(): void;
}

/** Either the key is this request's now, or an earlier request's answer is to be given again. */
export type KeyTurn = { owned: OwnedKey } | { answered: KeptAnswer };

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;
/** How often a repeat looks at a key whose owner is still working. */
const POLL_MS = 50;

/** The key as sent, refused (400) unless it is 1-255 visible ASCII characters. */
export function checkIdempotencyKey(key: string): string {
  if (!KEY_FORMAT.test(key)) {
    throw new AppError('invalid_request', 'Idempotency-Key must be 1-255 visible ASCII characters');
  }
  return key;
}

/** A digest of the parts that make a request what it is, for KeyedRequest.requestHash. */
export function keyedRequestHash(...parts: readonly string[]): string {
  return createHash('sha256').update(parts.join(' ')).digest('hex');
}

/**
 * Claims `request.key` for this request, or waits for the request that holds it: returns the key
 * owned (run the request, then `finish`) or the answer an earlier request with the same key and
 * input gave. Throws idempotency_key_reused for the same key with another input, and conflict when
 * the owner is still working after one lease.
 */
export async function takeIdempotencyKey(deps: IdempotencyDeps, request: KeyedRequest): Promise<KeyTurn> {
  const leaseMs = idempotencyLeaseMs(deps.writeTimeoutMs);
  const claim: IdempotencyClaim = { accountId: request.accountId, key: request.key, owner: randomUUID() };
  // Long enough to see a dead owner's lease, renewed just before it died, run out.
  const deadline = Date.now() + leaseMs + 1_000;
  for (;;) {
    if (
      await claimKey(deps.db, claim, request.requestHash, { leaseMs, ttlHours: IDEMPOTENCY_KEY_TTL_HOURS })
    ) {
      return { owned: ownKey(deps, claim, leaseMs) };
    }
    const row = await readKey(deps.db, request.accountId, request.key);
    if (!row) continue; // the first answered 5xx meanwhile: the key is free again
    if (row.requestHash !== request.requestHash) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request');
    }
    if (row.responseStatus !== null) {
      return { answered: { status: row.responseStatus, body: row.responseBody } };
    }
    if (row.expired) {
      const taken = await takeOverKey(deps.db, claim, row.owner, leaseMs);
      if (taken) {
        deps.logger.warn(
          { idempotencyKey: request.key, resumed: taken.resource ?? null },
          'took over an Idempotency-Key whose owner stopped renewing its lease',
        );
        return { owned: ownKey(deps, { ...claim, resume: taken.resource }, leaseMs) };
      }
      continue; // renewed, answered or taken by another repeat meanwhile: look again
    }
    if (Date.now() > deadline) {
      throw new AppError('conflict', 'A request with this Idempotency-Key is still in progress; retry later');
    }
    await sleep(POLL_MS);
  }
}

function ownKey(deps: IdempotencyDeps, claim: IdempotencyClaim, leaseMs: number): OwnedKey {
  const timer = setInterval(() => {
    renewLease(deps.db, claim, leaseMs).then(
      (owned) => {
        if (!owned) clearInterval(timer); // answered, or taken over: nothing left to hold
      },
      (error: unknown) => deps.logger.warn({ err: error }, 'Idempotency-Key lease not renewed'),
    );
  }, leaseMs / 3);
  timer.unref();
  return {
    claim,
    finish: async (answer) => {
      clearInterval(timer);
      try {
        if (answer.status >= 500) await releaseAfterFailure(deps.db, claim);
        else await storeAnswer(deps.db, claim, answer.status, answer.body);
      } catch (error) {
        deps.logger.warn(
          { err: error, idempotencyKey: claim.key },
          'Idempotency-Key answer not kept: its lease runs out and the next repeat takes it over',
        );
      }
    },
    abandon: () => clearInterval(timer),
  };
}

/**
 * How a transport keeps its answers on the key's row: `keep` turns the run's outcome into the
 * answer kept (an error of status 500 or more frees the key), `replay` turns a kept answer back
 * into the outcome (throwing for a kept error).
 */
export interface AnswerCodec<T> {
  keep(outcome: { value: T } | { error: unknown }): KeptAnswer;
  replay(answer: KeptAnswer): T;
}

/**
 * Runs `run` once per key and input: the first request runs it under the key's claim and keeps
 * its outcome; a repeat gets the kept outcome again (or waits for it); a request that takes over a
 * dead owner's key runs `run` with `claim.resume` set, and the use case answers from the resource
 * the dead request committed instead of paying again.
 */
export async function withIdempotencyKey<T>(
  deps: IdempotencyDeps,
  request: KeyedRequest,
  codec: AnswerCodec<T>,
  run: (claim: IdempotencyClaim) => Promise<T>,
): Promise<T> {
  const turn = await takeIdempotencyKey(deps, request);
  if ('answered' in turn) return codec.replay(turn.answered);
  const { owned } = turn;
  let value: T;
  try {
    value = await run(owned.claim);
  } catch (error) {
    await owned.finish(codec.keep({ error }));
    throw error;
  }
  await owned.finish(codec.keep({ value }));
  return value;
}
