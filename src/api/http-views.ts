import type { Account } from '../domain/accounts/account.js';
import { formatMicroUsd } from '../domain/money/usd.js';

/**
 * What REST and GraphQL show alike. Money leaves as a JSON number of dollars only at the edge, as
 * the spec prints it; everything behind the transports is bigint micro-USD.
 */
/**
 * Micro-USD as the JSON number of dollars the spec prints: the exact decimal, read as the nearest
 * double. The one conversion of money to a float, used by every REST view and error body.
 */
export function usdNumber(micro: bigint): number {
  return Number(formatMicroUsd(micro));
}

/** Our default avatar until one is set: an SVG we serve, so `avatar_url` is always a URL. */
export function avatarUrl(account: Pick<Account, 'id' | 'avatarUrl'>, baseUrl: string): string {
  return account.avatarUrl ?? `${baseUrl}/avatars/${account.id}.svg`;
}
