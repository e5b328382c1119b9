import { describe, expect, test } from 'vitest';
import { AppError } from '../errors.js';
import { likeEventType, parsePostId } from './engagement-rules.js';

describe('parsePostId', () => {
  test('accepts a UUID in any case and answers it in lower case', () => {
    expect(parsePostId('0A1B2C3D-0000-4000-8000-00000000000F')).toBe('0a1b2c3d-0000-4000-8000-00000000000f');
  });

  test.each(['', 'nope', '123', '0a1b2c3d-0000-4000-8000-00000000000', "'; DROP TABLE posts; --", 42])(
    'refuses %j as an unknown post (not_found, not invalid_request)',
    (raw) => {
      expect(() => parsePostId(raw)).toThrow(AppError);
      try {
        parsePostId(raw);
      } catch (error) {
        expect((error as AppError).code).toBe('not_found');
      }
    },
  );
});

test('likeEventType names the change', () => {
  expect(likeEventType(true)).toBe('post.liked');
  expect(likeEventType(false)).toBe('post.unliked');
});
