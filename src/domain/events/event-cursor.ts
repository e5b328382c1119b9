/**
 * A cursor in an account's event log is the decimal `sequence` of the last event seen (0: before
 * the first). Not opaque on purpose: a receiver of webhooks stores the last sequence it handled
 * and can replay or page from it without keeping anything else. Answers undefined for anything
 * that is not such a number (a 400 at the edge).
 */
export function parseEventCursor(text: string | undefined): bigint | undefined {
  if (text === undefined || text === '') return 0n;
  if (!/^\d{1,18}$/.test(text)) return undefined;
  return BigInt(text);
}

export const EVENT_PAGE_DEFAULT = 50;
export const EVENT_PAGE_MAX = 100;
