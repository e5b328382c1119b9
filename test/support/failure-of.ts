import { expect } from 'vitest';
import { ChainError } from '../../src/adapters/solana/chain-errors.js';

/** The ChainError a promise rejects with (failing the test if it resolves or throws anything else). */
export async function failureOf(promise: Promise<unknown>): Promise<ChainError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ChainError);
  return error as ChainError;
}
