/**
 * JSON Schemas of the /api/v1 routes: Fastify validates requests and serialises responses with
 * them, and schema/openapi.json is generated from them. Rules here mirror the domain's
 * (src/domain/accounts/profile-rules.ts), which checks them again for GraphQL and the CLI.
 */
export const errorBody = {
  type: 'object',
  required: ['error', 'message'],
  properties: { error: { type: 'string' }, message: { type: 'string' } },
} as const;

/** 402 of the write path: what the account has and what the request needed, in dollars. */
export const insufficientBalanceBody = {
  type: 'object',
  required: ['error', 'message', 'balance_usd', 'required_usd'],
  properties: {
    error: { type: 'string', enum: ['insufficient_balance'] },
    message: { type: 'string' },
    balance_usd: { type: 'number' },
    required_usd: { type: 'number' },
  },
} as const;

/** 402 of a swap: the native variant (token base units as strings of digits). */
export const insufficientNativeBody = {
  type: 'object',
  required: ['error', 'message', 'balance_tokens', 'required_tokens'],
  properties: {
    error: { type: 'string', enum: ['insufficient_balance'] },
    message: { type: 'string' },
    balance_tokens: { type: 'string', description: 'Native base units available' },
    required_tokens: { type: 'string', description: 'Native base units the swap needed' },
  },
} as const;

/** 409 of a close: close_blocked names what blocks it (src/app/reports/finance-periods.ts). */
export const closeBlockedBody = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string' },
    message: { type: 'string' },
    blockers: {
      type: 'array',
      description: 'close_blocked: the open items of the period, by status',
      items: {
        type: 'object',
        required: ['status', 'count'],
        properties: { status: { type: 'string' }, count: { type: 'integer' } },
      },
    },
  },
} as const;

/**
 * `Idempotency-Key` of the paid writes (idempotency.hook.ts). Documentation only: the rule is in
 * the description, not in the schema, so a bad key keeps the answer of checkIdempotencyKey rather
 * than Fastify's validation error.
 */
export const idempotencyKeyHeaders = {
  type: 'object',
  properties: {
    'Idempotency-Key': {
      type: 'string',
      description:
        'Optional: 1-255 visible ASCII characters (U+0021-U+007E), unique per request you mean (a malformed key is 400 invalid_request). A retry with the same key, method, path and body gets the first answer again (header Idempotent-Replayed: true) and pays once; the same key with another body is 422',
    },
  },
} as const;

const handle = { type: 'string', pattern: '^[a-z0-9_]{3,20}$', description: '3-20 of a-z, 0-9, _' } as const;

/** The text rule of one-line fields (src/domain/text/storable-text.ts), as descriptions state it. */
export const ONE_LINE =
  'one line: no control characters (U+0000-U+001F, U+007F-U+009F) and no bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)';
const displayName = {
  type: 'string',
  maxLength: 50,
  description: `At most 50 characters, ${ONE_LINE}`,
} as const;

/** Fields own and public profiles share. */
const profileRequired = ['handle', 'display_name', 'avatar_url', 'bio', 'wallet_address'] as const;
const profileProperties = {
  handle: { type: 'string' },
  display_name: { type: 'string' },
  avatar_url: { type: 'string', format: 'uri' },
  bio: { type: 'string' },
  wallet_address: { type: 'string' },
  social_username: { type: 'string', description: 'Present only when linked' },
} as const;

export const ownProfile = {
  type: 'object',
  required: [...profileRequired, 'earned_usdc', 'total_earned', 'total_spent', 'native_tokens'],
  properties: {
    ...profileProperties,
    earned_usdc: { type: 'number', description: 'Available USDC balance, in dollars' },
    total_earned: { type: 'number' },
    total_spent: { type: 'number' },
    native_tokens: {
      type: 'string',
      description:
        'Available native-token balance in base units (9 decimals), a string of digits (our addition to the spec: what swap-to-usdc can sell)',
    },
  },
} as const;

export const publicProfile = {
  type: 'object',
  required: [...profileRequired, 'follower_count', 'following_count', 'post_count'],
  properties: {
    ...profileProperties,
    follower_count: { type: 'integer' },
    following_count: { type: 'integer' },
    post_count: { type: 'integer' },
  },
} as const;

export const signUpBody = {
  type: 'object',
  required: ['handle'],
  additionalProperties: false,
  properties: { handle, display_name: displayName },
  examples: [{ handle: 'alice', display_name: 'Alice Liddell' }],
} as const;

export const profilePatchBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    handle,
    display_name: displayName,
    bio: { type: 'string', maxLength: 160, description: `At most 160 characters, ${ONE_LINE}` },
  },
  examples: [{ display_name: 'Alice L.', bio: 'Posting from the ledger.' }],
} as const;

export const handleParams = {
  type: 'object',
  required: ['handle'],
  properties: {
    handle: { type: 'string', maxLength: 64, description: 'Without the @ (a leading @ is tolerated)' },
  },
} as const;

/** No format here: an id that is not a UUID names no post and answers 404 (engagement-rules.ts). */
export const postIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', description: 'The post (a UUID; anything else is 404)' } },
} as const;

/** Standard error answers every authenticated route documents. */
/** The `status` a paid write adds on 202: its payment was not executed within WRITE_TIMEOUT_MS. */
export const pendingStatus = {
  type: 'string',
  enum: ['pending'],
  description: 'Only on 202: not executed by the cluster within WRITE_TIMEOUT_MS',
} as const;

export const authErrors = { 401: errorBody, 403: errorBody, 429: errorBody } as const;
