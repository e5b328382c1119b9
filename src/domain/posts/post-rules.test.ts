import { describe, expect, test } from 'vitest';
import { validatePostDraft } from './post-rules.js';

const id = '0b6f2c1e-8d7a-4c3b-9e2f-1a2b3c4d5e6f';

describe('validatePostDraft', () => {
  test('accepts a post, a reply with parent_id and a quote with quoted_post_id', () => {
    expect(validatePostDraft({ type: 'post', content: 'hi' })).toEqual({
      type: 'post',
      content: 'hi',
      referenceId: undefined,
    });
    expect(validatePostDraft({ type: 'reply', content: 'yes', parentId: id }).referenceId).toBe(id);
    expect(
      validatePostDraft({ type: 'quote', content: 'so', quotedPostId: id.toUpperCase() }).referenceId,
    ).toBe(id);
  });

  test('refuses empty or over-long content, unknown types and mismatched references', () => {
    expect(() => validatePostDraft({ type: 'post', content: '   ' })).toThrow(
      /content must be a non-empty string/,
    );
    expect(() => validatePostDraft({ type: 'post', content: '🙂'.repeat(1001) })).toThrow(
      /at most 1000 characters/,
    );
    expect(validatePostDraft({ type: 'post', content: '🙂'.repeat(1000) }).content).toHaveLength(2000);
    expect(() => validatePostDraft({ type: 'story', content: 'x' })).toThrow(/type must be one of/);
    expect(() => validatePostDraft({ type: 'reply', content: 'x' })).toThrow(/a reply needs parent_id/);
    expect(() => validatePostDraft({ type: 'post', content: 'x', parentId: id })).toThrow(
      /parent_id is only for a reply/,
    );
    expect(() => validatePostDraft({ type: 'quote', content: 'x', quotedPostId: 'nope' })).toThrow(
      /quoted_post_id/,
    );
  });
});
