import { AppError } from '../errors.js';
import { containsNul, nulMessage } from '../text/storable-text.js';

export type PostType = 'post' | 'reply' | 'quote';
export const POST_TYPES: readonly PostType[] = ['post', 'reply', 'quote'];
/** Content limit (the spec leaves it open): 1,000 characters, counted as code points. */
export const CONTENT_MAX = 1000;

export interface PostDraft {
  type: PostType;
  content: string;
  /** The post replied to (reply) or quoted (quote). */
  referenceId: string | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * POST /posts body rules: content non-empty after trimming and at most 1,000 characters; a reply
 * names `parent_id`, a quote `quoted_post_id`, a plain post neither.
 */
export function validatePostDraft(body: unknown): PostDraft {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('invalid_request', 'The body must be a JSON object');
  }
  const { content, type, parent_id: parentId, quoted_post_id: quotedId } = body as Record<string, unknown>;
  if (typeof type !== 'string' || !POST_TYPES.includes(type as PostType)) {
    throw new AppError('invalid_request', 'type must be one of post, reply, quote', { field: 'type' });
  }
  if (typeof content !== 'string' || content.trim().length === 0) {
    throw new AppError('invalid_request', 'content must be a non-empty string', { field: 'content' });
  }
  if (containsNul(content)) {
    throw new AppError('invalid_request', nulMessage('content'), { field: 'content' });
  }
  if ([...content].length > CONTENT_MAX) {
    throw new AppError('invalid_request', `content must be at most ${CONTENT_MAX} characters`, {
      field: 'content',
    });
  }
  const reference = (field: 'parent_id' | 'quoted_post_id', value: unknown, needed: boolean) => {
    if (!needed) {
      if (value !== undefined && value !== null) {
        throw new AppError(
          'invalid_request',
          `${field} is only for a ${field === 'parent_id' ? 'reply' : 'quote'}`,
          { field },
        );
      }
      return undefined;
    }
    if (typeof value !== 'string' || !UUID.test(value)) {
      throw new AppError('invalid_request', `a ${type} needs ${field} (a post id)`, { field });
    }
    return value.toLowerCase();
  };
  const parent = reference('parent_id', parentId, type === 'reply');
  const quoted = reference('quoted_post_id', quotedId, type === 'quote');
  return { type: type as PostType, content, referenceId: parent ?? quoted };
}
