import { findRunById } from '../../adapters/postgres/report-runs.repository.js';
import type { AccountStore } from '../../domain/accounts/accounts.service.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import {
  checkFileLinkSignature,
  fileLinkQuery,
  parseFileLinkQuery,
  REPORT_FILE_LINK_SECONDS,
  type FileLinkQuery,
} from '../../domain/reports/report-file-link.js';
import { isReportId } from '../../domain/reports/report-request.js';
import { reportFileUrl, type ReportRun } from '../../domain/reports/report-run.js';
import { getRun, requireSucceeded, type ReportRunDeps } from './report-runs.js';

/*
 * Download links of report files (docs/reports.md, "Download links"; docs/security.md): the one
 * core REST (POST /reports/{id}/file-link, GET /reports/{id}/file?expires&signature) and GraphQL
 * (reportFileLink) call. A page cannot put an API key on a plain navigation, and fetching the file
 * with the key held it whole in the browser; a link lets the browser's download manager stream it
 * to disk.
 */

export interface FileLinkDeps extends Pick<ReportRunDeps, 'db'> {
  /** HMAC key of the links' signatures, derived from the master key for this use alone. */
  reportLinkKey: Buffer;
  accounts: Pick<AccountStore, 'byId'>;
}

type Caller = Pick<Viewer, 'accountId' | 'role'>;

export interface FileLink {
  /** `/api/v1/reports/{id}/file?expires=…&signature=…`: opens the file without a key until `expiresAt`. */
  url: string;
  expiresAt: Date;
}

/**
 * A link to a succeeded run's file, for the caller: the same access as downloading it with the key
 * (404 for a run that is not theirs, as GET /reports/{id}), 409 until the run has succeeded. It
 * opens that run's file only, until `lifetimeSeconds` have passed, with the caller's access.
 */
export async function issueFileLink(
  deps: FileLinkDeps,
  caller: Caller,
  id: string,
  {
    now = new Date(),
    lifetimeSeconds = REPORT_FILE_LINK_SECONDS,
  }: { now?: Date; lifetimeSeconds?: number } = {},
): Promise<FileLink> {
  const run = await getRun(deps, caller, id);
  requireSucceeded(run);
  const expires = Math.floor(now.getTime() / 1000) + lifetimeSeconds;
  const query = fileLinkQuery(
    deps.reportLinkKey,
    { runId: run.id, expires, accountId: caller.accountId },
    run.accountId,
  );
  return { url: `${reportFileUrl(run.id)}${query}`, expiresAt: new Date(expires * 1000) };
}

/** Every refusal of a link reads the same but for expiry: nothing tells a run that exists from one that does not. */
const invalidLink = () =>
  new AppError(
    'forbidden',
    'This download link is not valid: ask for a new one (POST /reports/{id}/file-link)',
  );

/**
 * The run a link opens and the account it was issued to (whose rate limits the download spends),
 * or 403 `forbidden`: a signature that is not ours for this run, expiry and account, one that has
 * expired, or an account that no longer has the run (the access is checked again, as it is now).
 */
export async function checkFileLink(
  deps: FileLinkDeps,
  id: string,
  query: FileLinkQuery,
  now: Date = new Date(),
): Promise<{ run: ReportRun; accountId: string }> {
  const link = parseFileLinkQuery(query);
  if (!link || !isReportId(id)) throw invalidLink();
  const stored = await findRunById(deps.db, id);
  if (!stored) throw invalidLink();
  // A link names its account only when it is not the run's asker (a closed period's run, downloaded
  // by another finance account); the signature covers the account either way.
  const accountId = link.account ?? stored.accountId;
  const verdict = checkFileLinkSignature(
    deps.reportLinkKey,
    { runId: stored.id, expires: link.expires, accountId },
    link.signature,
    now,
  );
  if (verdict === 'invalid') throw invalidLink();
  if (verdict === 'expired') {
    throw new AppError(
      'forbidden',
      'This download link has expired (links open the file for a few minutes): ask for a new one',
    );
  }
  const account = await deps.accounts.byId(accountId);
  if (!account) throw invalidLink();
  let run: ReportRun;
  try {
    run = await getRun(deps, { accountId, role: account.role }, stored.id);
  } catch (error) {
    if (error instanceof AppError && error.code === 'not_found') throw invalidLink();
    throw error;
  }
  return { run, accountId };
}
