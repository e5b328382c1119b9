import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * Signed download links of report files (docs/reports.md, "Download links"): the query of
 * `/api/v1/reports/{id}/file?expires=<unix s>&signature=<hex>`, which a browser navigates to
 * without an API key, so its download manager streams the file to disk. The signature is an
 * HMAC-SHA256, under a key of its own (derived from the master key, src/app/wiring-core.ts), of
 * the run's id, the expiry and the account the link was issued to: a link opens one run's file,
 * until it expires, with that account's access.
 */

/** How long a link opens the file, in seconds: long enough to start a download, short enough to leak little. */
export const REPORT_FILE_LINK_SECONDS = 5 * 60;

/** What a link's signature covers. */
export interface FileLinkClaims {
  /** The run's id as stored (lowercase UUID). */
  runId: string;
  /** Unix seconds after which the link opens nothing. */
  expires: number;
  /** The account the link was issued to: its access and its rate limits apply. */
  accountId: string;
}

/** The query a link carries: `account` only when the link was issued to someone else than the run's asker. */
export interface FileLinkQuery {
  expires?: string | undefined;
  signature?: string | undefined;
  account?: string | undefined;
}

/** Domain separation inside the key's own MACs, and a version for a future change of the payload. */
const PAYLOAD_PREFIX = 'ledgerfeed report file link v1';

export function fileLinkSignature(key: Buffer, claims: FileLinkClaims): string {
  return createHmac('sha256', key)
    .update(`${PAYLOAD_PREFIX}\n${claims.runId}\n${claims.expires}\n${claims.accountId}`)
    .digest('hex');
}

/** `?expires=…&signature=…` (then `&account=…` when the holder is not the run's asker). */
export function fileLinkQuery(key: Buffer, claims: FileLinkClaims, runOwnerId: string): string {
  const signature = fileLinkSignature(key, claims);
  const account = claims.accountId === runOwnerId ? '' : `&account=${claims.accountId}`;
  return `?expires=${claims.expires}&signature=${signature}${account}`;
}

const SIGNATURE = /^[0-9a-f]{64}$/;
const EXPIRES = /^\d{1,12}$/;
const ACCOUNT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The shape of a link's query, before any lookup: undefined when it cannot be one we signed. */
export function parseFileLinkQuery(
  query: FileLinkQuery,
): { expires: number; signature: string; account: string | undefined } | undefined {
  const { expires, signature, account } = query;
  if (typeof expires !== 'string' || !EXPIRES.test(expires)) return undefined;
  if (typeof signature !== 'string' || !SIGNATURE.test(signature)) return undefined;
  if (account !== undefined && (typeof account !== 'string' || !ACCOUNT_ID.test(account))) return undefined;
  return { expires: Number(expires), signature, account };
}

/**
 * Whether `signature` is ours over these claims (compared in constant time), and if so whether
 * it is still in force at `now`.
 */
export function checkFileLinkSignature(
  key: Buffer,
  claims: FileLinkClaims,
  signature: string,
  now: Date,
): 'valid' | 'expired' | 'invalid' {
  const expected = Buffer.from(fileLinkSignature(key, claims), 'hex');
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  return claims.expires * 1000 <= now.getTime() ? 'expired' : 'valid';
}
