import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { insertSwap, signedSwapPaymentIds, swapById } from '../../adapters/postgres/swaps.repository.js';
import { USDC_DECIMALS, type PlatformChain, type Signer } from '../../adapters/solana/index.js';
import { AppError } from '../../domain/errors.js';
import { formatMicroUsd } from '../../domain/money/usd.js';
import { quoteSellNative, type SwapQuote } from '../../domain/swap/constant-product.js';
import { swapLegs } from '../../domain/swap/swap-legs.js';
import { parseAmountTokens, validateSwapDraft } from '../../domain/swap/swap-rules.js';
import { awaitPayment, type AwaitedPayment, type AwaitPaymentDeps } from '../write-path/await-payment.js';
import { resumedId, type IdempotencyClaim } from '../write-path/idempotency-keys.js';
import {
  commitPaidWrite,
  committedPayment,
  keyedWrite,
  signTransfer,
  walletSigner,
  type SignedPayment,
} from '../write-path/payment-transaction.js';
import { withPoolLock } from './pool-lock.js';
import { readPoolReserves } from './pool-reserves.js';

/** The one pool there is: its lock name (a second pool would be keyed by its vaults). */
const POOL = 'native-usdc';
/** How long a swap waits for an earlier swap of the pool still unexecuted before answering 503. */
const PREVIOUS_SWAP_WAIT_MS = 30_000;
const POLL_MS = 25;

export interface SwapResult {
  id: string;
  quote: SwapQuote;
  chainTransactionId: string;
  /** How far the transaction had got, and its signature (a re-sign changes it). */
  settled: AwaitedPayment['settled'];
  swapTx: string;
}

/**
 * The quote for selling `amountTokens` (raw input: REST's query text or GraphQL's string) against
 * the pool's reserves on chain now. Nothing is reserved: a swap made later prices against the
 * reserves then.
 */
export async function quoteSwap(
  deps: Pick<AwaitPaymentDeps, 'rpc' | 'bootstrapChain'>,
  rawAmountTokens: unknown,
): Promise<SwapQuote> {
  const amountTokens = parseAmountTokens(rawAmountTokens);
  const platform = await deps.bootstrapChain();
  return quoteOrRefuse(await readPoolReserves(deps.rpc, platform), amountTokens);
}

/**
 * Sells native tokens for USDC to the platform's pool, in one serialised step per pool (see
 * withPoolLock): wait until no earlier swap of the pool is left unexecuted; read the reserves
 * (commitment processed); quote (x*y=k, 30 bps, rounding for the pool); refuse below
 * `min_amount_usdc` (409 slippage_exceeded, nothing written); sign one transaction (the user's
 * tokens to the native vault, the pool's USDC to the user; user and pool authority sign, the
 * platform fee payer pays); commit the ledger movement, the swaps row and the outbox row together
 * (a native balance short of the amount is 402, nothing written); hand the row to the payments
 * worker and wait until the cluster executed it. Only then does the next swap read reserves, so
 * each swap prices against the reserves the previous one left.
 *
 * The USDC received is credited as held (`pending`) until the transaction confirms, like every
 * other credit; the native tokens leave the user's balance at once (a conditional debit).
 *
 * `idempotency` (REST's or GraphQL's Idempotency-Key): the commit records the swap on the key, or fails with
 * 409 if a retry took the key over; resuming a dead request's key awaits and answers with the swap
 * its commit recorded (no lock: nothing is priced again).
 */
export async function swapToUsdc(
  deps: AwaitPaymentDeps,
  accountId: string,
  body: unknown,
  idempotency?: IdempotencyClaim,
): Promise<SwapResult> {
  const resumed = resumedId(idempotency, 'swap');
  const committedBefore = resumed ? await committedSwap(deps, resumed) : undefined;
  if (committedBefore) return committedBefore;
  const draft = validateSwapDraft(body);
  const platform = await deps.bootstrapChain();
  const user = await walletSigner(deps.db, deps.keystore, accountId);
  // Set once the swap has committed: from then on the caller gets it, never an error (releasing
  // the pool lock may still fail, and a 5xx would free the Idempotency-Key for a second swap).
  let committed: SwapResult | undefined;
  try {
    return await withPoolLock(deps.db, POOL, () => lockedSwap());
  } catch (error) {
    if (!committed) throw error;
    deps.logger.warn(
      { err: error, swapTx: committed.swapTx },
      'swap committed; the error after it is not the caller’s',
    );
    return committed;
  }

  async function lockedSwap(): Promise<SwapResult> {
    await previousSwapsExecuted(deps);
    const quote = quoteOrRefuse(await readPoolReserves(deps.rpc, platform), draft.amountTokens);
    if (draft.minAmountUsdcMicro !== null && quote.amountUsdcMicro < draft.minAmountUsdcMicro) {
      throw new AppError(
        'slippage_exceeded',
        `The swap would pay $${formatMicroUsd(quote.amountUsdcMicro)}, below min_amount_usdc $${formatMicroUsd(draft.minAmountUsdcMicro)}; nothing was moved`,
        {
          amountUsdcMicro: quote.amountUsdcMicro.toString(),
          minAmountUsdcMicro: draft.minAmountUsdcMicro.toString(),
        },
      );
    }
    const swapId = randomUUID();
    const payment = await signSwap(deps, platform, user, quote, swapId);
    const { chainTransactionId } = await commitPaidWrite(deps.db, {
      movement: {
        kind: 'swap',
        legs: swapLegs(accountId, quote.amountTokens, quote.amountUsdcMicro),
        pending: 'hold',
      },
      row: (movementId) => insertSwap(deps.db, { id: swapId, accountId, quote }, movementId),
      payment,
      event: {
        type: 'swap.created',
        actor_id: accountId,
        amount_micro: quote.amountUsdcMicro,
        payload: JSON.stringify({
          swap_id: swapId,
          amount_tokens: quote.amountTokens.toString(),
          fee_tokens: quote.feeTokens.toString(),
        }),
      },
      idempotency: keyedWrite(idempotency, 'swap', swapId),
    });
    // Waits for 'sent' (executed) up to WRITE_TIMEOUT_MS. Past it the lock is released anyway:
    // the next swap's previousSwapsExecuted() waits for this row before reading reserves.
    // Throws only for a payment that failed on chain and was refunded: that error is the caller's.
    const awaited = await awaitPayment(deps, { chainTransactionId, swapTx: payment.signature });
    committed = { id: swapId, quote, chainTransactionId, settled: awaited.settled, swapTx: awaited.swapTx };
    return committed;
  }
}

/**
 * The swap a dead request committed under the key being resumed, awaited as swapToUsdc awaits a
 * new one; undefined when its payment failed on chain and was reversed (nothing stayed moved:
 * swap anew). The quote is priced again from the reserves the row kept: the same numbers.
 */
async function committedSwap(deps: AwaitPaymentDeps, swapId: string): Promise<SwapResult | undefined> {
  const swap = await swapById(deps.db, swapId);
  const payment = await committedPayment(deps.db, swap.movement_id);
  if (payment.failed) return undefined;
  const quote = quoteSellNative(
    { nativeUnits: swap.reserve_native_before, usdcMicro: swap.reserve_usdc_before },
    swap.amount_tokens,
  );
  const awaited = await awaitPayment(deps, payment);
  return { id: swap.id, quote, chainTransactionId: payment.chainTransactionId, ...awaited };
}

function quoteOrRefuse(
  reserves: { nativeUnits: bigint; usdcMicro: bigint },
  amountTokens: bigint,
): SwapQuote {
  if (reserves.nativeUnits <= 0n || reserves.usdcMicro <= 0n) {
    throw new AppError('unavailable', 'The swap pool has no liquidity');
  }
  const quote = quoteSellNative(reserves, amountTokens);
  if (quote.amountUsdcMicro <= 0n) {
    throw new AppError('invalid_request', 'amount_tokens is too small: it would buy less than 1 micro-USD', {
      field: 'amount_tokens',
    });
  }
  return quote;
}

/**
 * The swap's one transaction: two transferChecked legs (user -> native vault, USDC vault -> user),
 * atomic, the user's USDC account created first if missing (rent paid by the fee payer), a Memo
 * naming the swap, signed by the fee payer, the user and the pool authority.
 */
async function signSwap(
  deps: AwaitPaymentDeps,
  platform: PlatformChain,
  user: Signer,
  quote: SwapQuote,
  swapId: string,
): Promise<SignedPayment> {
  const pool = platform.signers.pool_authority;
  return signTransfer(deps.rpc, platform, {
    legs: [
      {
        mint: platform.nativeMint,
        decimals: platform.nativeDecimals,
        from: user.publicKey,
        to: pool.publicKey,
        amount: quote.amountTokens,
      },
      {
        mint: platform.usdcMint,
        decimals: USDC_DECIMALS,
        from: pool.publicKey,
        to: user.publicKey,
        amount: quote.amountUsdcMicro,
        // A wallet only ever paid in native tokens (creator fund) has no USDC account yet.
        createRecipientAta: true,
      },
    ],
    memo: `ledgerfeed:swap:${swapId}`,
    signers: [user, pool],
  });
}

/**
 * Waits until every swap of the pool committed earlier has been executed by the cluster (or failed
 * and was reversed): a swap still `signed` (a process that crashed after its commit, a 202 past
 * WRITE_TIMEOUT_MS, a re-sign) would otherwise be missing from the reserves read next, and the
 * pool would pay twice against the same reserves. Such rows are handed to the payments worker
 * again (job ids dedupe); still waiting after PREVIOUS_SWAP_WAIT_MS is 503.
 */
async function previousSwapsExecuted(deps: AwaitPaymentDeps): Promise<void> {
  const deadline = Date.now() + PREVIOUS_SWAP_WAIT_MS;
  let enqueued = false;
  for (;;) {
    const unexecuted = await signedSwapPaymentIds(deps.db);
    if (unexecuted.length === 0) return;
    if (!enqueued) {
      for (const id of unexecuted) await deps.payments.enqueue(id);
      enqueued = true;
    }
    if (Date.now() > deadline) {
      throw new AppError('unavailable', 'The swap pool is still settling an earlier swap; try again shortly');
    }
    await sleep(POLL_MS);
  }
}
