/**
 * The chain activity of `bench/follower.ts`, in a child process of its own: USDC transfers at a fixed
 * rate on an open-loop schedule (it never lowers the rate; a transfer that goes out late is counted
 * as schedule lag), most of them between outside wallets (they touch none of our token accounts)
 * and `depositPercent` of them from an outside wallet into one of our accounts: a deposit, as an
 * exchange's withdrawal would be. None is signed by the platform's mint authorities (the follower
 * leaves the faucets' transfers to the faucets); the platform's fee payer pays every fee (it is no
 * mint authority, and outside wallets then need no SOL).
 *
 * For each deposit it measures the time from its block's confirmation to its history item: it
 * reads the confirmed slot every POLL_MS (getSlot at `confirmed`: when the confirmed slot reaches
 * the deposit's, its block is confirmed) and the deposit's `deposit_transactions` row (written in
 * the transaction that credits it: the history item) every POLL_MS, one statement for every deposit
 * not seen yet. Every transfer's status is read until it landed; one not seen after RESEND_MS is
 * sent again (same bytes, same signature).
 *
 * Driven over IPC by `startLoad`: init (outside wallets funded by the faucet, our recipients' USDC
 * token accounts created), then start/stop per measured run; stop answers once every transfer of
 * the run landed and every deposit's history item was seen (or STOP_LIMIT_MS passed).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import {
  buildCreateAtas,
  buildMintTo,
  buildTransfer,
  confirmMany,
  sendWires,
  signerFromSeed,
  signTransaction,
  USDC_DECIMALS,
  type SignedForSend,
  type Signer,
} from '../src/adapters/solana/index.js';
import { forkBenchChild } from './bench-child.js';
import { openChildCore, serveParent, type ChildCore, type ChildStack } from './child-core.js';

/** Between two reads of the confirmed slot, and of the deposits' rows. */
const POLL_MS = 50;
/** Between two reads of the transfers' statuses. */
const STATUS_MS = 500;
/** A transfer not seen this long after its send is sent again. */
const RESEND_MS = 5_000;
/** How long stop waits for the run's transfers to land and its deposits to be seen. */
const STOP_LIMIT_MS = 60_000;
/** The schedule's tick: the transfers that fell due meanwhile go out in one batched request. */
const TICK_MS = 100;
/** Every outside wallet starts with 1,000 USDC, far more than a run moves (at most $1 a transfer). */
const OUTSIDER_FUNDING_MICRO = 1_000_000_000n;
/** Setup transactions (funding, token accounts) per confirmMany call. */
const SETUP_CHUNK = 200;

export interface LoadInit extends ChildStack {
  /** Our accounts' wallets that receive the deposits. */
  recipients: string[];
  /** Outside wallets to create and fund. */
  outsiders: number;
}

export interface LoadPlan {
  perSecond: number;
  /** Share of the transfers that go into our accounts, in percent. */
  depositPercent: number;
}

export interface DepositRecord {
  signature: string;
  amountMicro: string;
  slot: number;
  /** When the confirmed slot first reached the deposit's (Date.now() ms); null if never seen. */
  confirmedAtMs: number | null;
  /** When its deposit_transactions row was first seen (Date.now() ms); null if never. */
  seenAtMs: number | null;
}

export interface LoadResult {
  seconds: number;
  sent: number;
  /** Landed without error at confirmed or finalized. */
  landed: number;
  /** Landed with an error. */
  failed: number;
  /** Not seen by the end of the stop's wait. */
  missing: number;
  resent: number;
  /** Longest delay of a tick behind its time, ms. */
  lagMaxMs: number;
  firstErrors: string[];
  deposits: DepositRecord[];
}

type ToChild = { type: 'init'; init: LoadInit } | { type: 'start'; plan: LoadPlan } | { type: 'stop' };
type FromChild =
  | { type: 'ready'; outsiders: number; recipients: number }
  | { type: 'started' }
  | { type: 'result'; result: LoadResult };

export interface Load {
  start(plan: LoadPlan): Promise<void>;
  stop(): Promise<LoadResult>;
  close(): Promise<void>;
}

export async function startLoad(init: LoadInit): Promise<Load> {
  const child = forkBenchChild<FromChild>(import.meta.url);
  try {
    await child.ask({ type: 'init', init } satisfies ToChild, 'ready');
  } catch (error) {
    await child.close();
    throw error;
  }
  return {
    start: async (plan) => void (await child.ask({ type: 'start', plan } satisfies ToChild, 'started')),
    stop: async () => (await child.ask({ type: 'stop' } satisfies ToChild, 'result')).result,
    close: child.close,
  };
}

/** A transfer of the run, until it landed. */
interface Sent {
  item: SignedForSend;
  sentAt: number;
  deposit?: DepositRecord;
  landed: boolean;
}

/** Sends setup transactions (signed by `sign`) in chunks and fails on any that did not land. */
async function setUp(
  child: ChildCore,
  count: number,
  sign: (i: number, blockhash: string) => ReturnType<typeof signTransaction>,
): Promise<void> {
  const { rpc } = child.core;
  for (let from = 0; from < count; from += SETUP_CHUNK) {
    const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
    const items = Array.from({ length: Math.min(SETUP_CHUNK, count - from) }, (_, k) => ({
      ...sign(from + k, blockhash),
      lastValidBlockHeight,
    }));
    const outcomes = await confirmMany(rpc, items, {
      commitment: 'confirmed',
      skipPreflight: true,
      pollMs: 100,
    });
    const failed = outcomes.find((outcome) => !outcome.ok);
    if (failed && !failed.ok)
      throw new Error(`setup transaction ${failed.signature}: ${failed.error.message}`);
  }
}

async function initialize(init: LoadInit) {
  const child = openChildCore(init, 2, 'error');
  const platform = await child.core.bootstrapChain();
  const feePayer = platform.signers.fee_payer;
  const mintAuthority = platform.signers.usdc_mint_authority;
  const outsiders = Array.from({ length: init.outsiders }, () => signerFromSeed(randomBytes(32)));
  const recipients = init.recipients.map((address) => new PublicKey(address));
  // The faucet's transfers into outside wallets: the follower leaves them alone (mint authority).
  await setUp(child, outsiders.length, (i, blockhash) =>
    signTransaction(
      buildMintTo({
        feePayer: feePayer.publicKey,
        recentBlockhash: blockhash,
        mint: platform.usdcMint,
        decimals: USDC_DECIMALS,
        authority: mintAuthority.publicKey,
        to: outsiders[i]!.publicKey,
        amount: OUTSIDER_FUNDING_MICRO,
      }),
      [feePayer, mintAuthority],
    ),
  );
  // Our recipients' USDC token accounts exist before the runs, so that every deposit of every run
  // is the same plain transfer (none also creates the account).
  await setUp(child, recipients.length, (i, blockhash) =>
    signTransaction(
      buildCreateAtas({
        feePayer: feePayer.publicKey,
        recentBlockhash: blockhash,
        owner: recipients[i]!,
        mints: [platform.usdcMint],
      }),
      [feePayer],
    ),
  );
  return { child, platform, outsiders, recipients };
}

type World = Awaited<ReturnType<typeof initialize>>;

/** One run: the schedule, the slot and row pollers, the status reader; `stop` ends and reports. */
function startRun(world: World, plan: LoadPlan) {
  const { child, platform, outsiders, recipients } = world;
  const { rpc } = child.core;
  const feePayer = platform.signers.fee_payer;
  const tag = randomBytes(3).toString('hex');
  const startedAt = performance.now();
  const sent: Sent[] = [];
  const unseen = new Map<string, DepositRecord>();
  /** [confirmed slot, Date.now()] each time the confirmed slot moved up. */
  const confirmedSlots: Array<[number, number]> = [];
  let blockhash: { blockhash: string; lastValidBlockHeight: number } | undefined;
  let stopping = false;
  let scheduleDone = false;
  let lagMaxMs = 0;
  let resent = 0;
  const firstErrors: string[] = [];
  let failed = 0;
  let stoppedAt: number | undefined;
  const stopLimitPassed = () => stoppedAt !== undefined && performance.now() - stoppedAt > STOP_LIMIT_MS;

  const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
  const transfer = (n: number, recent: NonNullable<typeof blockhash>): Sent => {
    const from: Signer = pick(outsiders);
    const deposit = Math.random() * 100 < plan.depositPercent;
    let to = deposit ? pick(recipients) : pick(outsiders).publicKey;
    while (!deposit && to.equals(from.publicKey) && outsiders.length > 1) to = pick(outsiders).publicKey;
    // Up to $1 into ours, up to a cent between outsiders; the memo makes every transfer distinct.
    const amount = BigInt(1 + Math.floor(Math.random() * (deposit ? 1_000_000 : 10_000)));
    const signed = signTransaction(
      buildTransfer({
        feePayer: feePayer.publicKey,
        recentBlockhash: recent.blockhash,
        legs: [{ mint: platform.usdcMint, decimals: USDC_DECIMALS, from: from.publicKey, to, amount }],
        memo: `follower bench ${tag} #${n}`,
      }),
      [feePayer, from],
    );
    const entry: Sent = {
      item: { ...signed, lastValidBlockHeight: recent.lastValidBlockHeight },
      sentAt: performance.now(),
      landed: false,
    };
    if (deposit) {
      entry.deposit = {
        signature: signed.signature,
        amountMicro: amount.toString(),
        slot: -1,
        confirmedAtMs: null,
        seenAtMs: null,
      };
      unseen.set(signed.signature, entry.deposit);
    }
    return entry;
  };

  const note = (error: unknown) => {
    if (firstErrors.length < 5) firstErrors.push(error instanceof Error ? error.message : String(error));
  };

  const schedule = (async () => {
    blockhash = await rpc.getLatestBlockhash('confirmed');
    let refreshedAt = performance.now();
    const sends: Array<Promise<unknown>> = [];
    for (let tick = 0; !stopping; tick++) {
      const dueAt = startedAt + tick * TICK_MS;
      const wait = dueAt - performance.now();
      if (wait > 0) await sleep(wait);
      lagMaxMs = Math.max(lagMaxMs, performance.now() - dueAt);
      if (performance.now() - refreshedAt > 2_000) {
        refreshedAt = performance.now();
        rpc.getLatestBlockhash('confirmed').then((next) => (blockhash = next), note);
      }
      // Every transfer whose time fell before now (the first is due at 0).
      const due = Math.floor(((performance.now() - startedAt) / 1000) * plan.perSecond) + 1 - sent.length;
      if (due <= 0) continue;
      const batch = Array.from({ length: due }, (_, k) => transfer(sent.length + k, blockhash!));
      sent.push(...batch);
      sends.push(
        sendWires(
          rpc,
          batch.map((entry) => entry.item),
          { skipPreflight: true, preflightCommitment: 'confirmed' },
        ).then((errors) => errors.forEach((error) => error && note(error)), note),
      );
    }
    await Promise.all(sends);
    scheduleDone = true;
  })();

  const slotPoller = (async () => {
    while (!scheduleDone || unseen.size > 0 || sent.some((s) => !s.landed)) {
      if (stopLimitPassed()) return;
      try {
        const slot = await rpc.call<number>('getSlot', [{ commitment: 'confirmed' }]);
        const last = confirmedSlots.at(-1);
        if (!last || slot > last[0]) confirmedSlots.push([slot, Date.now()]);
      } catch (error) {
        note(error);
      }
      await sleep(POLL_MS);
    }
  })();

  const rowPoller = (async () => {
    while (!scheduleDone || unseen.size > 0) {
      if (stopLimitPassed()) return;
      if (unseen.size > 0) {
        try {
          const { rows } = await sql<{ signature: string }>`
            SELECT signature FROM deposit_transactions
             WHERE signature = ANY(${[...unseen.keys()]}::text[]) AND status <> 'reversed'`.execute(child.db);
          const now = Date.now();
          for (const { signature } of rows) {
            const deposit = unseen.get(signature);
            if (deposit) deposit.seenAtMs = now;
            unseen.delete(signature);
          }
        } catch (error) {
          note(error);
        }
      }
      await sleep(POLL_MS);
    }
  })();

  const statusReader = (async () => {
    while (!scheduleDone || sent.some((s) => !s.landed)) {
      if (stopLimitPassed()) return;
      await sleep(STATUS_MS);
      const waiting = sent.filter((s) => !s.landed);
      if (waiting.length === 0) continue;
      try {
        const statuses = await rpc.getSignatureStatuses(waiting.map((s) => s.item.signature));
        const late: Sent[] = [];
        waiting.forEach((entry, i) => {
          const status = statuses[i];
          if (status && status.confirmationStatus !== 'processed') {
            entry.landed = true;
            if (entry.deposit) entry.deposit.slot = status.slot;
            if (status.err !== null) {
              failed++;
              note(`${entry.item.signature}: ${JSON.stringify(status.err)}`);
            }
          } else if (!status && performance.now() - entry.sentAt > RESEND_MS) {
            entry.sentAt = performance.now();
            late.push(entry);
          }
        });
        if (late.length > 0) {
          resent += late.length;
          await sendWires(
            rpc,
            late.map((entry) => entry.item),
            { skipPreflight: true, preflightCommitment: 'confirmed' },
          );
        }
      } catch (error) {
        note(error);
      }
    }
  })();

  return {
    stop: async (): Promise<LoadResult> => {
      stopping = true;
      stoppedAt = performance.now();
      const seconds = (stoppedAt - startedAt) / 1000;
      await Promise.all([schedule, slotPoller, rowPoller, statusReader]);
      const deposits = sent.flatMap((entry) => (entry.deposit ? [entry.deposit] : []));
      for (const deposit of deposits) {
        // The first moment the confirmed slot had reached the deposit's block.
        const reached = deposit.slot < 0 ? undefined : confirmedSlots.find(([slot]) => slot >= deposit.slot);
        deposit.confirmedAtMs = reached ? reached[1] : null;
      }
      return {
        seconds,
        sent: sent.length,
        landed: sent.filter((s) => s.landed).length - failed,
        failed,
        missing: sent.filter((s) => !s.landed).length,
        resent,
        lagMaxMs,
        firstErrors,
        deposits,
      };
    },
  };
}

function runChild(): void {
  let world: World | undefined;
  let run: ReturnType<typeof startRun> | undefined;
  const send = (message: FromChild) => process.send!(message);
  const handle = async (message: ToChild): Promise<void> => {
    switch (message.type) {
      case 'init':
        world = await initialize(message.init);
        send({ type: 'ready', outsiders: world.outsiders.length, recipients: world.recipients.length });
        return;
      case 'start':
        run = startRun(world!, message.plan);
        send({ type: 'started' });
        return;
      case 'stop': {
        const result = await run!.stop();
        run = undefined;
        send({ type: 'result', result });
        return;
      }
      default:
        message satisfies never;
    }
  };
  serveParent<ToChild>(handle, () => world?.child.close() ?? Promise.resolve());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) runChild();
