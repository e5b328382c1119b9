export { createLedgerfeedClient } from './client.js';
export type {
  AccountEvent,
  ClientOptions,
  FeedPost,
  FeedSort,
  LedgerfeedClient,
  NewPost,
  NewSend,
  PaidPost,
  PaidWriteOptions,
  Payment,
  Post,
  ReconciliationReport,
  Transaction,
} from './client.js';
export { LedgerfeedError } from './errors.js';
export { graphql, readFragment, type FragmentOf, type ResultOf, type VariablesOf } from './graphql.js';
export type { paths, components } from './generated/openapi.js';
export type { RetryPolicy } from './transport.js';
export { DEFAULT_WEBHOOK_TOLERANCE_SEC, verifyWebhook, type WebhookEvent } from './webhooks.js';
