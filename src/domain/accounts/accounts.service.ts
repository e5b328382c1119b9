import { requireFullKey, type Viewer } from '../auth/api-keys.service.js';
import { AppError } from '../errors.js';
import type { Account, AccountRole, AccountStats, HandleReservation } from './account.js';
import {
  BIO_MAX,
  DISPLAY_NAME_MAX,
  HANDLE_CHANGE_COOLDOWN_MS,
  nextHandleChangeAt,
  normalizeHandle,
  validateHandle,
  validateText,
} from './profile-rules.js';

/** Persistence the account service needs (implemented in adapters/postgres). */
export interface AccountStore {
  /** Inserts; a taken handle, or one reserved for its previous owner, is an AppError('conflict'). */
  insert(input: NewAccountRow): Promise<Account>;
  byId(id: string): Promise<Account | undefined>;
  byHandle(handle: string): Promise<Account | undefined>;
  byWalletAddress(address: string): Promise<Account | undefined>;
  /**
   * Applies the changes; a taken handle, or one reserved for another account, is an
   * AppError('conflict'). A handle change stores `releasedHandle`'s reservation and consumes this
   * account's reservation of the new handle in the same transaction, serialised per handle.
   */
  update(id: string, changes: ProfileChanges): Promise<Account>;
  /** The reservation of a released handle, expired or not; undefined if it was never released. */
  handleReservation(handle: string): Promise<HandleReservation | undefined>;
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
  /** With `handle`: the handle given up, kept for this account alone until `reservedUntil`. */
  releasedHandle?: { handle: string; reservedUntil: Date };
  displayName?: string;
  bio?: string;
}

/**
 * Creates a custodial wallet and its sealed secret. Nothing is written on chain: its token accounts
 * are created when money first arrives (an unfunded account costs no rent).
 */
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
 * Opens an account: checks the handle, creates its custodial wallet (a sealed key; nothing on
 * chain), stores both. The insert checks the handle again (unique index) for the race.
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
  const reservation = await deps.accounts.handleReservation(handle);
  const now = (deps.now ?? (() => new Date()))();
  if (reservation && reservation.reservedUntil > now) throw handleReserved(reservation);
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
 * The fields of a profile update, as a transport hands them over: only those present change; an
 * explicit null is refused like any non-string (messages name the fields as the REST spec does).
 */
export interface ProfilePatch {
  handle?: string | null;
  displayName?: string | null;
  bio?: string | null;
}

/**
 * PATCH /me/profile: only supplied fields change. A handle may change once per 7 days; the
 * refusal says when it may change again.
 *
 * Handle changes are guarded against takeover: they need a key holding every scope (the spec asks
 * only `read` for this endpoint, which is kept for display name and bio), and the handle given up
 * stays reserved for this account for the cooldown, so nobody else can take it and receive what
 * is sent to it. Returning to one's own reserved handle (an undo) is allowed during the cooldown;
 * it does not restart the cooldown, and the handle left is reserved only until the reservation
 * taken back would have ended, so undoing back and forth cannot hold handles longer.
 */
export async function updateProfile(
  deps: AccountDeps,
  caller: Pick<Viewer, 'accountId' | 'scopes'>,
  patch: ProfilePatch,
): Promise<Account> {
  const { accountId } = caller;
  const account = await requireAccount(deps.accounts, accountId);
  const now = (deps.now ?? (() => new Date()))();
  const changes: ProfileChanges = {};
  if (patch.displayName !== undefined)
    changes.displayName = validateText(patch.displayName, 'display_name', DISPLAY_NAME_MAX);
  if (patch.bio !== undefined) changes.bio = validateText(patch.bio, 'bio', BIO_MAX);
  if (patch.handle !== undefined) {
    const handle = validateHandle(
      typeof patch.handle === 'string' ? normalizeHandle(patch.handle) : patch.handle,
    );
    if (handle !== account.handle) {
      requireFullKey(caller, 'Changing the handle');
      const reservation = await deps.accounts.handleReservation(handle);
      const held = reservation && reservation.reservedUntil > now ? reservation : undefined;
      if (held && held.accountId !== account.id) throw handleReserved(held);
      if (held) {
        changes.handle = handle;
        changes.releasedHandle = { handle: account.handle, reservedUntil: held.reservedUntil };
      } else {
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
        changes.releasedHandle = {
          handle: account.handle,
          reservedUntil: new Date(now.getTime() + HANDLE_CHANGE_COOLDOWN_MS),
        };
      }
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

/** A released handle within its reservation: taken for everyone but its previous owner. */
export function handleReserved(reservation: Pick<HandleReservation, 'handle' | 'reservedUntil'>): AppError {
  const until = reservation.reservedUntil.toISOString();
  return new AppError(
    'conflict',
    `The handle ${JSON.stringify(reservation.handle)} is taken: it stays reserved for its previous owner until ${until}`,
    { field: 'handle', reservedUntil: until },
  );
}
