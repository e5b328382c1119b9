/**
 * What an account can be told (the event log and webhooks). A webhook endpoint subscribes to some
 * of these (every one by default); `reconciliation.exception` reaches only accounts with the
 * finance role; `report.succeeded` and `report.failed` reach the account that asked for the run; `period.closed` and `period.reopened`
 * (a finance period, docs/reports.md) reach every finance and admin account.
 */
export const EVENT_TYPES = [
  'payment.confirmed',
  'payment.finalized',
  'payment.failed',
  'post.replied',
  'post.quoted',
  'post.reposted',
  'post.liked',
  'follow.created',
  'send.received',
  'reconciliation.exception',
  'report.succeeded',
  'report.failed',
  'period.closed',
  'period.reopened',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** One entry of an account's log, as the API answers it and a webhook delivers it. */
export interface AccountEvent {
  /** `evt_<32 hex>`: what a receiver dedupes by. */
  id: string;
  type: EventType;
  /** ISO 8601, when the change committed. */
  created_at: string;
  /** Strictly increasing per account, dense (1, 2, 3, ...): a gap in a full log is a bug. */
  sequence: number;
  data: Record<string, unknown>;
}
