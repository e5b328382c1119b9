import { AppError } from '../errors.js';
import { refusedTextMessage } from '../text/storable-text.js';

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

/** A post, reply or quote as a transport hands it over (REST's body and GraphQL's input, mapped). */
export interface PostInput {
  /** Checked here: a transport may pass any string (GraphQL's enum, REST's validated body). */
  type: string;
  content: string;
  /** The post replied to: a reply only. */
  parentId?: string | null;
  /** The post quoted: a quote only. */
  quotedPostId?: string | null;
}

/**
 * The rules of a post: content non-empty after trimming, at most 1,000 characters, with line breaks
 * and tabs but no other control characters and no bidi controls (storable-text.ts); a reply
 * names a parent, a quote a quoted post, a plain post neither. Messages name the fields as the
 * REST spec does (`parent_id`), the wording every client has seen.
 */
export function validatePostDraft(input: PostInput): PostDraft {
  const { content, type } = input;
  if (!POST_TYPES.includes(type as PostType)) {
    throw new AppError('invalid_request', 'type must be one of post, reply, quote', { field: 'type' });
  }
  if (content.trim().length === 0) {
    throw new AppError('invalid_request', 'content must be a non-empty string', { field: 'content' });
  }
  const refused = refusedTextMessage('content', content, { multiline: true });
  if (refused) throw new AppError('invalid_request', refused, { field: 'content' });
  if ([...content].length > CONTENT_MAX) {
    throw new AppError('invalid_request', `content must be at most ${CONTENT_MAX} characters`, {
      field: 'content',
    });
  }
  const reference = (
    field: 'parent_id' | 'quoted_post_id',
    value: string | null | undefined,
    needed: boolean,
  ) => {
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
  const parent = reference('parent_id', input.parentId, type === 'reply');
  const quoted = reference('quoted_post_id', input.quotedPostId, type === 'quote');
  return { type: type as PostType, content, referenceId: parent ?? quoted };
}
