import { AppError } from '../errors.js';
import type { Account, AccountRole, AccountStats } from './account.js';
import {
  BIO_MAX,
  DISPLAY_NAME_MAX,
  nextHandleChangeAt,
  normalizeHandle,
  validateHandle,
  validateText,
} from './profile-rules.js';

/** Persistence the account service needs (implemented in adapters/postgres). */
export interface AccountStore {
  /** Inserts; a taken handle is an AppError('conflict'). */
  insert(input: NewAccountRow): Promise<Account>;
  byId(id: string): Promise<Account | undefined>;
  byHandle(handle: string): Promise<Account | undefined>;
  byWalletAddress(address: string): Promise<Account | undefined>;
  /** Applies the changes; a taken handle is an AppError('conflict'). */
  update(id: string, changes: ProfileChanges): Promise<Account>;
  stats(id: string): Promise<AccountStats>;
}

export interface NewAccountRow {
  handle: string;
  displayName: string;
  role: AccountRole;
  walletAddress: string;
  walletSecret: string;
}

export interface ProfileChanges {
  handle?: string;
  handleChangedAt?: Date;
  displayName?: string;
  bio?: string;
}

/** Creates a custodial wallet, ready on chain (token accounts made), and its sealed secret. */
export interface WalletProvisioner {
  provision(): Promise<{ address: string; sealedSecret: string }>;
}

export interface AccountDeps {
  accounts: AccountStore;
  wallets: WalletProvisioner;
  now?: () => Date;
}

export interface CreateAccountInput {
  handle: unknown;
  displayName?: unknown;
  role?: AccountRole;
}

/**
 * Opens an account: checks the handle, creates its custodial wallet on chain, stores both. The
 * handle is checked before the chain work so a taken handle costs nothing; the insert checks again
 * (unique index) for the race.
 */
export async function createAccount(deps: AccountDeps, input: CreateAccountInput): Promise<Account> {
  const handle = validateHandle(
    typeof input.handle === 'string' ? normalizeHandle(input.handle) : input.handle,
  );
  const displayName =
    input.displayName === undefined || input.displayName === null
      ? handle
      : validateText(input.displayName, 'display_name', DISPLAY_NAME_MAX);
  if (await deps.accounts.byHandle(handle)) throw handleTaken(handle);
  const wallet = await deps.wallets.provision();
  return deps.accounts.insert({
    handle,
    displayName,
    role: input.role ?? 'user',
    walletAddress: wallet.address,
    walletSecret: wallet.sealedSecret,
  });
}

/**
 * PATCH /me/profile: only supplied fields change. A handle may change once per 7 days; the
 * refusal says when it may change again.
 */
export async function updateProfile(deps: AccountDeps, accountId: string, patch: unknown): Promise<Account> {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
    throw new AppError('invalid_request', 'The body must be a JSON object');
  }
  const body = patch as Record<string, unknown>;
  const unknownFields = Object.keys(body).filter((k) => !['handle', 'display_name', 'bio'].includes(k));
  if (unknownFields.length > 0) {
    throw new AppError(
      'invalid_request',
      `Unknown field ${unknownFields.join(', ')}: expected handle, display_name, bio`,
    );
  }
  const account = await requireAccount(deps.accounts, accountId);
  const now = (deps.now ?? (() => new Date()))();
  const changes: ProfileChanges = {};
  if (body.display_name !== undefined)
    changes.displayName = validateText(body.display_name, 'display_name', DISPLAY_NAME_MAX);
  if (body.bio !== undefined) changes.bio = validateText(body.bio, 'bio', BIO_MAX);
  if (body.handle !== undefined) {
    const handle = validateHandle(
      typeof body.handle === 'string' ? normalizeHandle(body.handle) : body.handle,
    );
    if (handle !== account.handle) {
      const allowedAt = nextHandleChangeAt(account.handleChangedAt, now);
      if (allowedAt) {
        throw new AppError(
          'conflict',
          `The handle can change once every 7 days; next change allowed at ${allowedAt.toISOString()}`,
          { allowedAt: allowedAt.toISOString() },
        );
      }
      changes.handle = handle;
      changes.handleChangedAt = now;
    }
  }
  if (Object.keys(changes).length === 0) return account;
  return deps.accounts.update(accountId, changes);
}

export async function findByHandle(accounts: AccountStore, raw: string): Promise<Account> {
  const handle = normalizeHandle(raw);
  const account = /^[a-z0-9_]{3,20}$/.test(handle) ? await accounts.byHandle(handle) : undefined;
  if (!account) throw new AppError('not_found', `No account with handle ${JSON.stringify(handle)}`);
  return account;
}

export async function requireAccount(accounts: AccountStore, id: string): Promise<Account> {
  const account = await accounts.byId(id);
  if (!account) throw new AppError('not_found', 'Account not found');
  return account;
}

export function handleTaken(handle: string): AppError {
  return new AppError('conflict', `The handle ${JSON.stringify(handle)} is taken`, { field: 'handle' });
}
