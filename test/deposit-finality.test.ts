import { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { associatedTokenAccount, fundUsdc } from '../src/adapters/solana/index.js';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { until } from './support/until.js';

/*
 * Every deposit ends `finalized` in the history (issue 49 item 7): one the wallet follower finds,
 * and the faucets' (the portal's devFaucet here; `cli fund` and the test helpers credit the same
 * `deposit:<signature>` movement, which is what the follower follows). And the chain's balance reads
 * answer at the commitment they are asked for.
 */

/**
 * Slots of 250 ms: a deposit confirmed one slot after it lands is finalized 32 slots (8 s) later,
 * time enough to read it between the two under a loaded machine (each test checks it still was).
 */
const SLOT_MS = 250;

let h: ServiceHarness;
beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' }, { slotMs: SLOT_MS });
});
afterAll(async () => {
  await h?.close();
});

interface Entry {
  type: string;
  amount_usd: number;
  swap_tx: string | null;
  status: string | null;
  slot: number | null;
  confirmed_at: string | null;
  finalized_at: string | null;
}

async function entryOf(who: Member, signature: string): Promise<Entry> {
  const response = await h.call(who, 'GET', '/me/transactions?limit=50');
  expect(response.status).toBe(200);
  const { transactions } = (await response.json()) as { transactions: Entry[] };
  const entry = transactions.find((t) => t.swap_tx === signature);
  if (!entry) throw new Error(`no history entry for ${signature}`);
  return entry;
}

const finalizedEntry = (who: Member, signature: string) =>
  until(
    'the deposit finalized in the history',
    () => entryOf(who, signature),
    (entry) => entry.status === 'finalized',
  );

async function chainStatus(signature: string): Promise<string | undefined> {
  const [status] = await h.env.app.rpc.getSignatureStatuses([signature], { searchTransactionHistory: true });
  return status?.confirmationStatus;
}

/** The wallet's USDC token account balance as the chain answers it at `commitment`. */
async function usdcAt(wallet: string, commitment: 'confirmed' | 'finalized'): Promise<bigint> {
  const ata = associatedTokenAccount(h.platform.usdcMint, new PublicKey(wallet)).toBase58();
  const { value } = await h.env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata,
    { commitment },
  ]);
  return BigInt(value.amount);
}

function expectFinalized(entry: Entry) {
  expect(entry).toMatchObject({ type: 'deposit', status: 'finalized' });
  expect(Number.isSafeInteger(entry.slot)).toBe(true);
  expect(entry.confirmed_at).toEqual(expect.any(String));
  expect(Date.parse(entry.finalized_at!)).toBeGreaterThanOrEqual(Date.parse(entry.confirmed_at!));
}

describe('deposits are followed to finalized', () => {
  test('a deposit the wallet follower finds ends finalized in the history; until then a finalized balance read leaves it out', async () => {
    const saver = await h.member('dep_saver', 1_000_000n);
    // Wait until the member's own faucet deposit is final, so the balances below differ by ours only.
    await finalizedEntry(saver, saver.depositTx!);

    // USDC from outside the ledger (minted straight into the wallet): the chain has it at confirmed.
    const { signature } = await fundUsdc(h.env.app.rpc, h.platform, saver.account.walletAddress, 2_500_000n);
    const confirmedBalance = await usdcAt(saver.account.walletAddress, 'confirmed');
    const finalizedBalance = await usdcAt(saver.account.walletAddress, 'finalized');
    expect(await chainStatus(signature), 'still not finalized after the reads').toBe('confirmed');
    expect(confirmedBalance).toBe(3_500_000n);
    expect(finalizedBalance).toBe(1_000_000n);

    expect((await followWallets(h.env.app)).deposits).toBe(1);
    const credited = await entryOf(saver, signature);
    expect(credited).toMatchObject({ type: 'deposit', amount_usd: 2.5 });
    expect(['confirmed', 'finalized']).toContain(credited.status);

    expectFinalized(await finalizedEntry(saver, signature));
    expect(await chainStatus(signature)).toBe('finalized');
    // Final: the two reads agree.
    expect(await usdcAt(saver.account.walletAddress, 'finalized')).toBe(3_500_000n);
    expect(await usdcAt(saver.account.walletAddress, 'confirmed')).toBe(3_500_000n);
    // GET /payments/{swap_tx} answers the same entry.
    const payment = await h.call(saver, 'GET', `/payments/${signature}`);
    expect(payment.status).toBe(200);
    expect(((await payment.json()) as Entry).status).toBe('finalized');
  }, 90_000);

  test("the portal faucet's deposit (and the helpers' as `cli fund` records it) ends finalized in the history", async () => {
    const dev = await h.member('dep_dev', 1_000_000n);
    const { data, errors } = await h.gql(dev, 'mutation { devFaucet { signature amountUsdMicro } }');
    expect(errors).toBeUndefined();
    const signature = data.devFaucet.signature as string;
    expect(['confirmed', 'finalized']).toContain((await entryOf(dev, signature)).status);

    expectFinalized(await finalizedEntry(dev, signature));
    // The deposit that funded the member (fundUsdc + the ledger's deposit, as `cli fund` does it).
    expectFinalized(await finalizedEntry(dev, dev.depositTx!));
  }, 90_000);
});
