import type { Transaction } from 'kysely';
import type { Database } from './database.js';

/**
 * An open Postgres transaction, as a use case holds it: it passes it from one repository call to
 * the next so they commit together, and never builds a query on it (Kysely stays in this adapter).
 */
export type Tx = Transaction<Database>;
