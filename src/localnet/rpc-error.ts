/** A JSON-RPC error with the codes and shapes Solana validators use. */
export class RpcError extends Error {
  override name = 'RpcError';

  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const RPC_CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** sendTransaction preflight failure; data carries { err, logs, unitsConsumed }. */
  preflightFailure: -32002,
  signatureVerificationFailure: -32003,
  /** getBlock: the block was pruned ("cleaned up"); the message names the first available one. */
  blockCleanedUp: -32001,
  /** getBlock: no block at that commitment (yet); a reader retries. */
  blockNotAvailable: -32004,
  /** getBlock: the slot produced no block. */
  slotSkipped: -32007,
  /** Slot skipped / block not available: also used for "not yet confirmed" lookups. */
  transactionHistoryNotAvailable: -32011,
  /**
   * Ours, from the far end of JSON-RPC's server-error range (validators number theirs up from
   * -32001): a state-changing call refused because a web page could have sent it.
   */
  refusedToBrowser: -32099,
} as const;

export const invalidParams = (message: string) =>
  new RpcError(RPC_CODES.invalidParams, `Invalid params: ${message}`);
