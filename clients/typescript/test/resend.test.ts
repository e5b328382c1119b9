import { parse } from 'graphql';
import { expect, test } from 'vitest';
import { resendOf } from '../src/graphql.js';

const resend = (text: string) => resendOf(parse(text));

test('paid fields are counted as the server counts them: aliases, inline fragments, fragment spreads', () => {
  expect(resend('query { viewer { handle } }')).toEqual({ idempotencyKey: false, safe: true });
  expect(resend('mutation { like(postId: "p") { liked } }')).toEqual({
    idempotencyKey: false,
    safe: false,
  });
  expect(resend('mutation { createPost(input: { type: POST, content: "a" }) { id } }')).toEqual({
    idempotencyKey: true,
    safe: true,
  });
  // One paid field inside a fragment is still one: keyed by the header.
  expect(resend('mutation { ... on Mutation { repost(postId: "p") { swapTx } } }')).toEqual({
    idempotencyKey: true,
    safe: true,
  });
  // Two (one direct, one spread): the header cannot cover them, so no header and no resend...
  const two = `mutation { a: createPost(input: { type: POST, content: "a" }) { id } ...Second }
    fragment Second on Mutation { b: createPost(input: { type: POST, content: "b" }) { id } }`;
  expect(resend(two)).toEqual({ idempotencyKey: false, safe: false });
  // ...unless each carries its own idempotencyKey argument.
  const keyed = two
    .replace('content: "a" }', 'content: "a" }, idempotencyKey: "k1"')
    .replace('content: "b" }', 'content: "b" }, idempotencyKey: "k2"');
  expect(resend(keyed)).toEqual({ idempotencyKey: false, safe: true });
});
