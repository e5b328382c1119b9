/**
 * JSON Schemas of the spec's Post as the read path answers it (they also serialise: a field not
 * listed here never leaves the server). Feed items and single posts differ only in the author
 * object (a single post adds wallet_address) and in the thread context a single post carries.
 */
const counts = {
  like_count: { type: 'integer' },
  reply_count: { type: 'integer', description: 'Replies whose payment did not fail on chain' },
  repost_count: { type: 'integer', description: 'Reposts whose payment did not fail on chain' },
} as const;

const postFields = {
  id: { type: 'string' },
  content: { type: 'string' },
  type: { type: 'string', enum: ['post', 'reply', 'quote'] },
  ...counts,
  created_at: { type: 'string', format: 'date-time' },
} as const;

const postRequired = [
  'id',
  'content',
  'type',
  'author',
  'like_count',
  'reply_count',
  'repost_count',
  'created_at',
] as const;

export const feedItem = {
  type: 'object',
  required: [...postRequired],
  properties: {
    ...postFields,
    author: {
      type: 'object',
      required: ['handle', 'display_name', 'avatar_url'],
      properties: {
        handle: { type: 'string' },
        display_name: { type: 'string' },
        avatar_url: { type: 'string', format: 'uri' },
      },
    },
  },
} as const;

/** A post as GET /posts/{id} nests it in `parent` and `quoted_post`: without thread context of its own. */
const contextPost = {
  type: 'object',
  required: [...postRequired],
  properties: {
    ...postFields,
    author: {
      type: 'object',
      required: ['handle', 'wallet_address', 'display_name', 'avatar_url'],
      properties: {
        handle: { type: 'string' },
        wallet_address: { type: 'string' },
        display_name: { type: 'string' },
        avatar_url: { type: 'string', format: 'uri' },
      },
    },
  },
} as const;

export const singlePost = {
  type: 'object',
  required: [...postRequired, 'parent', 'quoted_post'],
  properties: {
    ...contextPost.properties,
    parent: {
      ...contextPost,
      type: ['object', 'null'],
      description:
        'For a reply, the post replied to (its own parent and quoted_post are omitted: fetch it by id); null otherwise, or when that post’s payment failed on chain',
    },
    quoted_post: {
      ...contextPost,
      type: ['object', 'null'],
      description:
        'For a quote, the post quoted (its own parent and quoted_post are omitted); null otherwise, or when that post’s payment failed on chain',
    },
  },
} as const;

export const timelineItem = {
  type: 'object',
  required: [...postRequired],
  properties: {
    ...feedItem.properties,
    reposted_by: { type: 'string', description: 'Only on a repost: the handle of the reposter' },
    reposted_at: {
      type: 'string',
      format: 'date-time',
      description: 'Only on a repost: when it was reposted (its place in the timeline)',
    },
  },
} as const;

export const pageQuery = {
  limit: { type: 'string', description: 'Integer from 1 to 50; default 20' },
  cursor: { type: 'string', description: 'next_cursor of the previous page; omit for the first page' },
} as const;

/** `{posts, has_more, next_cursor?}` of the feed and the timeline. */
export function postPage(item: object) {
  return {
    type: 'object',
    required: ['posts', 'has_more'],
    properties: {
      posts: { type: 'array', items: item },
      has_more: { type: 'boolean' },
      next_cursor: { type: 'string', description: 'Present only when has_more' },
    },
  } as const;
}
