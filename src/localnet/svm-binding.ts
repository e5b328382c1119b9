import { createRequire } from 'node:module';
import type * as Internal from 'litesvm/dist/internal.js';

/**
 * litesvm 1.5.0's byte-level N-API class. Its CommonJS module assigns the native binding
 * wholesale, which Node's ESM loader cannot see named exports in, so it is loaded with require.
 * The public (kit-based) wrapper is 30-60x slower per call and pulls @solana/kit in; 0.x versions
 * corrupt the x87 FPU state. Never pass this module a key that is not 32 bytes or bytes that do
 * not deserialize: the native side aborts the process instead of throwing (guarded in chain.ts).
 */
export const svm = createRequire(import.meta.url)('litesvm/dist/internal.js') as typeof Internal;
export type LiteSvm = Internal.LiteSvm;
export type TransactionMetadata = Internal.TransactionMetadata;
export type FailedTransactionMetadata = Internal.FailedTransactionMetadata;
export type SvmAccount = Internal.Account;
