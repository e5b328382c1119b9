import { svm } from './svm-binding.js';

/**
 * litesvm reports errors as enum indexes or small classes; validators report them as JSON
 * (`{"InstructionError":[0,{"Custom":1}]}`), which web3.js and every indexer parse. The enums are
 * `const enum`s with no runtime object, so the names are listed here in declaration order
 * (litesvm/dist/internal.d.ts: TransactionErrorFieldless, InstructionErrorFieldless).
 */
const TRANSACTION_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
] as const;

const INSTRUCTION_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
] as const;

/** A transaction error as a validator serialises it in JSON-RPC answers. */
export type ValidatorError = string | Record<string, unknown>;

export function toValidatorError(err: unknown): ValidatorError {
  if (typeof err === 'number') return TRANSACTION_ERRORS[err] ?? `UnknownTransactionError(${err})`;
  if (err instanceof svm.TransactionErrorInstructionError) {
    return { InstructionError: [err.index, instructionError(err.err())] };
  }
  if (err instanceof svm.TransactionErrorDuplicateInstruction) return { DuplicateInstruction: err.index };
  if (err instanceof svm.TransactionErrorInsufficientFundsForRent) {
    return { InsufficientFundsForRent: { account_index: err.accountIndex } };
  }
  if (err instanceof svm.TransactionErrorProgramExecutionTemporarilyRestricted) {
    return { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } };
  }
  return 'UnknownTransactionError';
}

function instructionError(err: unknown): ValidatorError {
  if (typeof err === 'number') return INSTRUCTION_ERRORS[err] ?? `UnknownInstructionError(${err})`;
  if (err instanceof svm.InstructionErrorCustom) return { Custom: err.code };
  if (err instanceof svm.InstructionErrorBorshIo) return { BorshIoError: err.msg };
  return 'UnknownInstructionError';
}

/** A validator's wording of the errors clients match on; the rest read as split words. */
const TRANSACTION_ERROR_TEXT: Readonly<Record<string, string>> = {
  BlockhashNotFound: 'Blockhash not found',
  AlreadyProcessed: 'This transaction has already been processed',
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  SignatureFailure: 'Transaction did not pass signature verification',
};

/** The human text a validator puts in a preflight failure ("... custom program error: 0x1"). */
export function describeValidatorError(err: ValidatorError): string {
  if (typeof err === 'string') {
    const words = err.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
    return TRANSACTION_ERROR_TEXT[err] ?? words.replace(/^./, (c) => c.toUpperCase());
  }
  const rent = err.InsufficientFundsForRent as { account_index: number } | undefined;
  if (rent)
    return `Transaction results in an account (${rent.account_index}) with insufficient funds for rent`;
  const instruction = err.InstructionError as [number, ValidatorError] | undefined;
  if (instruction) {
    const [index, inner] = instruction;
    const detail =
      typeof inner === 'object' && 'Custom' in inner
        ? `custom program error: 0x${Number(inner.Custom).toString(16)}`
        : describeValidatorError(inner).toLowerCase();
    return `Error processing Instruction ${index}: ${detail}`;
  }
  return JSON.stringify(err);
}
