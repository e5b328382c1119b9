import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { IdempotencyClaim } from '../../app/write-path/idempotency-keys.js';
import {
  checkIdempotencyKey,
  keyedRequestHash,
  withIdempotencyKey,
  type AnswerCodec,
} from '../../app/write-path/with-idempotency-key.js';
import { AppError, type ErrorCode } from '../../domain/errors.js';
import { httpStatusOf } from '../error-map.js';
import type { GraphQLContext } from './context.js';

/** The mutations that move money: each takes an Idempotency-Key. */
export const PAID_MUTATIONS: ReadonlySet<string> = new Set(['createPost', 'repost', 'send', 'swapToUsdc']);

export const IDEMPOTENCY_KEY_ARG_DESCRIPTION =
  'Makes a retry safe: the same key with the same arguments answers the first result and pays once (also while the first is still running); with other arguments it is refused (IDEMPOTENCY_KEY_REUSED) and nothing moves. 1-255 visible ASCII characters, kept 24 hours. The `Idempotency-Key` HTTP header does the same for an operation holding one paid mutation; an operation with several gives each its own argument.';

/**
 * Runs a paid mutation's use case at most once per Idempotency-Key and input, by the same rules
 * and the same implementation as REST (app/write-path/with-idempotency-key.ts): the key is the
 * field's `idempotencyKey` argument, or the request's `Idempotency-Key` header when the operation
 * holds this one paid mutation only (a header cannot tell several apart). The input is the field's
 * name and arguments, so a REST request and a mutation never share a key's answer. Without a key,
 * `run` runs as before.
 */
export async function runPaidMutation<T>(
  ctx: GraphQLContext,
  info: GraphQLResolveInfo,
  args: { idempotencyKey?: string | null | undefined },
  run: (claim: IdempotencyClaim | undefined) => Promise<T>,
): Promise<T> {
  const key = keyOf(ctx, info, args.idempotencyKey);
  if (key === undefined) return run(undefined);
  const { idempotencyKey: _key, ...input } = args;
  const request = {
    accountId: ctx.viewer!.accountId,
    key,
    requestHash: keyedRequestHash('graphql', info.fieldName, JSON.stringify(input)),
  };
  return withIdempotencyKey(ctx.deps, request, keptResults<T>(), run);
}

function keyOf(ctx: GraphQLContext, info: GraphQLResolveInfo, argument: string | null | undefined) {
  if (argument != null) return checkIdempotencyKey(argument);
  const header = ctx.req.headers['idempotency-key'];
  if (header === undefined) return undefined;
  const paid = paidFieldsIn(info, info.operation.selectionSet);
  if (paid > 1) {
    throw new AppError(
      'invalid_request',
      `The Idempotency-Key header covers an operation with one paid mutation; this one has ${paid}: give each its idempotencyKey argument`,
    );
  }
  return checkIdempotencyKey((Array.isArray(header) ? header[0] : header) ?? '');
}

/** Paid mutation fields at the root of the operation, aliases and fragments included. */
function paidFieldsIn(info: GraphQLResolveInfo, selectionSet: SelectionSetNode): number {
  let count = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) count += PAID_MUTATIONS.has(selection.name.value) ? 1 : 0;
    else if (selection.kind === Kind.INLINE_FRAGMENT) count += paidFieldsIn(info, selection.selectionSet);
    else {
      const fragment = info.fragments[selection.name.value];
      if (fragment) count += paidFieldsIn(info, fragment.selectionSet);
    }
  }
  return count;
}

/**
 * A mutation's result kept as tagged JSON (bigint money and Dates survive the round trip), so a
 * repeat resolves exactly the fields the first one did; a service error below 500 is kept as
 * `{ error, message, details }` and thrown again. Any other error frees the key (status 500).
 */
function keptResults<T>(): AnswerCodec<T> {
  return {
    keep: (outcome) => {
      if ('value' in outcome) return { status: 200, body: JSON.stringify(outcome.value, tagged) };
      const { error } = outcome;
      if (!(error instanceof AppError)) return { status: 500, body: null };
      const body = { error: error.code, message: error.message, details: error.details };
      return { status: httpStatusOf[error.code], body: JSON.stringify(body) };
    },
    replay: ({ status, body }) => {
      if (status < 400) return JSON.parse(body ?? 'null', untagged) as T;
      const kept = JSON.parse(body ?? '{}') as {
        error: ErrorCode;
        message: string;
        details?: Record<string, unknown>;
      };
      throw new AppError(kept.error, kept.message, kept.details ?? {});
    },
  };
}

function tagged(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key]; // before Date's toJSON
  if (raw instanceof Date) return { $date: raw.toISOString() };
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  return value;
}

function untagged(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if ('$date' in value && typeof value.$date === 'string') return new Date(value.$date);
  if ('$bigint' in value && typeof value.$bigint === 'string') return BigInt(value.$bigint);
  return value;
}
