import { randomUUID } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import {
  accountByHandle,
  accountHandle,
  committedSendRow,
  insertSend,
} from '../../adapters/postgres/sends.repository.js';
import { MAX_MEMO_BYTES } from '../../adapters/solana/index.js';
import { AppError } from '../../domain/errors.js';
import { sendLegs } from '../../domain/ledger/ledger.js';
import { sendChainMemo, validateSendDraft, type SendInput } from '../../domain/sends/send-rules.js';
import { awaitPaid, type AwaitPaymentDeps, type Paid } from './await-payment.js';
import type { WritePathDeps } from './write-path-deps.js';
import { resumedId, type IdempotencyClaim } from './idempotency-keys.js';
import {
  commitPaidWrite,
  committedPayment,
  keyedWrite,
  signUsdcPayment,
  walletSigner,
} from './payment-transaction.js';
import type { SignedOutboxRow } from '../../adapters/redis/payments-queue.js';

export interface CreatedSend {
  id: string;
  fromHandle: string;
  toHandle: string;
  amountMicro: bigint;
  memo: string | null;
  createdAt: Date;
  chainTransactionId: string;
  swapTx: string;
  /** The outbox row as this commit wrote it (absent on a resumed key): handed off with it. */
  signed?: SignedOutboxRow | undefined;
}

/**
 * USDC to another account, as REST and GraphQL call it: the send committed (commitSend) and its
 * payment awaited up to WRITE_TIMEOUT_MS (no live update: no post changed).
 */
export async function sendUsdc(
  deps: AwaitPaymentDeps,
  senderId: string,
  input: SendInput,
  idempotency?: IdempotencyClaim,
): Promise<Paid<CreatedSend>> {
  return awaitPaid(deps, await commitSend(deps, senderId, input, idempotency));
}

/**
 * The commit alone, without the payment wait: for tests that drive the payment themselves. USDC
 * from one user to another, written like a paid post (commitPost): one Postgres
 * statement commits the ledger movement (kind 'send': the sender's conditional debit, counted
 * spent; the recipient's credit, counted neither), the `sends` row, the signed Solana transaction
 * (the recipient's USDC account created if missing, one transferChecked from the sender's
 * custodial wallet to the recipient's, the platform fee payer paying fee and rent, a Memo carrying
 * the send id and the memo) in the outbox and the 'send.created' event. The payments worker sends
 * it; a failure on chain reverses both legs.
 *
 * `idempotency` (REST's or GraphQL's Idempotency-Key): as for a paid post (commitPost).
 */
export async function commitSend(
  deps: WritePathDeps,
  senderId: string,
  input: SendInput,
  idempotency?: IdempotencyClaim,
): Promise<CreatedSend> {
  const resumed = resumedId(idempotency, 'send');
  const committed = resumed ? await committedSend(deps, resumed) : undefined;
  if (committed) return committed;
  const draft = validateSendDraft(input);
  const senderHandle = await accountHandle(deps.db, senderId);
  const recipient = await accountByHandle(deps.db, draft.toHandle);
  if (!recipient) throw new AppError('not_found', `No account @${draft.toHandle}`, { field: 'to_handle' });
  if (recipient.id === senderId) {
    throw new AppError('invalid_request', 'to_handle must be another account: you cannot send to yourself', {
      field: 'to_handle',
    });
  }
  if (!recipient.wallet_address) throw new Error(`account ${recipient.id} has no custodial wallet`);

  const sendId = randomUUID();
  const memo = sendChainMemo(sendId, draft.memo);
  const memoBytes = Buffer.byteLength(memo, 'utf8');
  if (memoBytes > MAX_MEMO_BYTES) {
    const room = MAX_MEMO_BYTES - Buffer.byteLength(sendChainMemo(sendId, ''), 'utf8');
    throw new AppError('invalid_request', `memo must be at most ${room} bytes of UTF-8 (it goes on chain)`, {
      field: 'memo',
    });
  }

  const legs = sendLegs(senderId, recipient.id, draft.amountMicro);
  const platform = await deps.bootstrapChain();
  const payer = await walletSigner(deps.db, deps.keystore, senderId);
  const payment = await signUsdcPayment(deps.rpc, platform, {
    from: payer,
    // The recipient may never have been paid: its USDC account is created in this transaction.
    to: [
      { owner: new PublicKey(recipient.wallet_address), amountMicro: draft.amountMicro, createAccount: true },
    ],
    memo,
  });

  const { chainTransactionId, row, signed } = await commitPaidWrite<{ created_at: Date }>(deps.db, {
    movement: { kind: 'send', legs, pending: 'hold' },
    row: (movementId) =>
      insertSend(
        deps.db,
        {
          id: sendId,
          senderId,
          recipientId: recipient.id,
          amountMicro: draft.amountMicro,
          memo: draft.memo,
        },
        movementId,
      ),
    payment,
    event: {
      type: 'send.created',
      actor_id: senderId,
      amount_micro: draft.amountMicro,
      payload: JSON.stringify({ send_id: sendId, recipient_id: recipient.id }),
    },
    idempotency: keyedWrite(idempotency, 'send', sendId),
  });
  return {
    id: sendId,
    fromHandle: senderHandle,
    toHandle: recipient.handle,
    amountMicro: draft.amountMicro,
    memo: draft.memo,
    createdAt: row.created_at,
    chainTransactionId,
    swapTx: payment.signature,
    signed,
  };
}

/**
 * The send a dead request committed under the key being resumed, as commitSend returned it;
 * undefined when its payment failed on chain and was reversed (nothing stayed charged: send anew).
 */
async function committedSend(deps: WritePathDeps, sendId: string): Promise<CreatedSend | undefined> {
  const send = await committedSendRow(deps.db, sendId);
  const payment = await committedPayment(deps.db, send.movement_id);
  if (payment.failed) return undefined;
  return {
    id: send.id,
    fromHandle: send.fromHandle,
    toHandle: send.toHandle,
    amountMicro: send.amount_micro,
    memo: send.memo,
    createdAt: send.created_at,
    chainTransactionId: payment.chainTransactionId,
    swapTx: payment.swapTx,
  };
}
