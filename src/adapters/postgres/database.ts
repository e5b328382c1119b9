import type { ColumnType, Generated } from 'kysely';

/** Kysely's view of the Postgres schema; kept in step with schema/postgres by hand. */
export interface Database {
  accounts: AccountsTable;
  platform_wallets: PlatformWalletsTable;
}

export interface PlatformWalletsTable {
  role: string;
  address: string;
  sealed_secret: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface AccountsTable {
  id: Generated<string>;
  handle: string;
  display_name: string;
  bio: Generated<string>;
  avatar_url: string | null;
  social_username: string | null;
  role: Generated<'user' | 'finance' | 'admin'>;
  wallet_address: string | null;
  handle_changed_at: Date | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
