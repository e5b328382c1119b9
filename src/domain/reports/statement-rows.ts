import type { MovementKind } from '../ledger/ledger.js';
import type { TransactionType } from '../ledger/transaction-history.js';
import { COINTRACKER_HEADER, KOINLY_HEADER } from './report-kinds.js';
import {
  cointrackerDate,
  currencySymbol,
  formatUnits,
  koinlyDate,
  type LedgerCurrency,
} from './report-format.js';

/** One line of an account's statement: its legs of one movement in one currency, summed. */
export interface StatementLine {
  createdAtMs: number;
  movementId: string;
  kind: MovementKind;
  currency: LedgerCurrency;
  type: TransactionType;
  /** Signed base units (negative: the account paid). */
  amount: bigint;
  description: string;
  swapTx: string | null;
}

/**
 * The label Koinly's universal CSV gets (its labels: deposits `airdrop`, `fork`, `mining`,
 * `reward`, `income` (Other Income), `loan interest`; withdrawals `gift`, `lost`, `cost`, `margin
 * fee`, ...; none for a plain deposit or withdrawal). A paid post or repost is an expense (`cost`);
 * a share of engagement paid for one's post is income for a service (`income`); a creator-fund
 * payout is a platform reward (`reward`). Sends, receipts, deposits and refunds are plain transfers:
 * no label (a refund gives back a payment, it is not income).
 */
export function koinlyLabel(line: Pick<StatementLine, 'type' | 'kind'>): string {
  switch (line.type) {
    case 'post':
    case 'repost':
      return 'cost';
    case 'earn':
      return line.kind === 'fund_payout' || line.kind === 'earn' ? 'reward' : 'income';
    case 'send':
    case 'receive':
    case 'deposit':
    case 'refund':
    case 'swap':
      return '';
  }
}

/**
 * CoinTracker's tag (its CSV tags for receives include `payment`, a payment received for a good or
 * service, and for sends `gift`, `donation`, `lost`): engagement shares are payments for one's
 * content (`payment`); nothing else has a tag that fits (a creator-fund payout is income without a
 * dedicated CSV tag we could confirm; a paid post is a plain disposal, CoinTracker's untagged send).
 */
export function cointrackerTag(line: Pick<StatementLine, 'type' | 'kind'>): string {
  return line.type === 'earn' && line.kind !== 'fund_payout' && line.kind !== 'earn' ? 'payment' : '';
}

/**
 * A movement's statement lines as the accounting tools' rows: one row per line, except a swap (the
 * account sends one currency and receives the other in the one transaction), which is one trade
 * row with both sides.
 */
function toolEntries(lines: readonly StatementLine[]): Array<{
  first: StatementLine;
  sent: StatementLine | null;
  received: StatementLine | null;
}> {
  const sent = lines.filter((line) => line.amount < 0n);
  const received = lines.filter((line) => line.amount > 0n);
  if (lines.length === 2 && sent.length === 1 && received.length === 1) {
    return [{ first: lines[0]!, sent: sent[0]!, received: received[0]! }];
  }
  return lines
    .filter((line) => line.amount !== 0n)
    .map((line) => ({
      first: line,
      sent: line.amount < 0n ? line : null,
      received: line.amount > 0n ? line : null,
    }));
}

const magnitude = (line: StatementLine) =>
  formatUnits(line.amount < 0n ? -line.amount : line.amount, line.currency);

/** Koinly universal rows (KOINLY_HEADER's columns) of one movement's lines. */
export function koinlyRows(lines: readonly StatementLine[]): string[][] {
  return toolEntries(lines).map(({ first, sent, received }) => {
    const row: Record<(typeof KOINLY_HEADER)[number], string> = {
      Date: koinlyDate(first.createdAtMs),
      'Sent Amount': sent ? magnitude(sent) : '',
      'Sent Currency': sent ? currencySymbol(sent.currency) : '',
      'Received Amount': received ? magnitude(received) : '',
      'Received Currency': received ? currencySymbol(received.currency) : '',
      'Fee Amount': '',
      'Fee Currency': '',
      'Net Worth Amount': '',
      'Net Worth Currency': '',
      Label: sent && received ? '' : koinlyLabel(first),
      Description: first.description,
      TxHash: first.swapTx ?? '',
    };
    return KOINLY_HEADER.map((column) => row[column]);
  });
}

/** CoinTracker rows (COINTRACKER_HEADER's columns) of one movement's lines. */
export function cointrackerRows(lines: readonly StatementLine[]): string[][] {
  return toolEntries(lines).map(({ first, sent, received }) => {
    const row: Record<(typeof COINTRACKER_HEADER)[number], string> = {
      Date: cointrackerDate(first.createdAtMs),
      'Received Quantity': received ? magnitude(received) : '',
      'Received Currency': received ? currencySymbol(received.currency) : '',
      'Sent Quantity': sent ? magnitude(sent) : '',
      'Sent Currency': sent ? currencySymbol(sent.currency) : '',
      'Fee Amount': '',
      'Fee Currency': '',
      Tag: sent && received ? '' : cointrackerTag(first),
    };
    return COINTRACKER_HEADER.map((column) => row[column]);
  });
}
