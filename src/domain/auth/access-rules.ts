import { AppError } from '../errors.js';
import type { Viewer } from './api-keys.service.js';

/**
 * Who may read what beyond API-key scopes, in one place for REST, GraphQL and the dashboards:
 * finance and admin read every account's money; everyone else only their own.
 */
export function isFinance(viewer: Pick<Viewer, 'role'> | null | undefined): boolean {
  return viewer?.role === 'finance' || viewer?.role === 'admin';
}

/** 403 unless the viewer holds the finance or admin role; `what` names what was asked for. */
export function requireFinance(viewer: Pick<Viewer, 'role'>, what: string): void {
  if (!isFinance(viewer)) throw new AppError('forbidden', `${what} needs the finance or admin role`);
}

/**
 * Whether the viewer reads what only finance reads: the role, through a key holding `read`. A
 * role widens what an account may read, never what a key may do: a finance account's delegated
 * `engage` key reads no more than any `engage` key (REST asks `read` of its finance routes too).
 */
export function readsAsFinance(viewer: Pick<Viewer, 'role' | 'scopes'> | null | undefined): boolean {
  return isFinance(viewer) && viewer?.scopes.has('read') === true;
}

/** 403 unless the viewer is `ownerId` or finance; `message` says whose the thing is. */
export function requireOwnerOrFinance(
  viewer: Pick<Viewer, 'role' | 'accountId'>,
  ownerId: string,
  message: string,
): void {
  if (viewer.accountId !== ownerId && !isFinance(viewer)) throw new AppError('forbidden', message);
}
