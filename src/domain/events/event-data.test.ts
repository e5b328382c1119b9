import { describe, expect, test } from 'vitest';
import { publicEventData } from './event-data.js';

const staged = (movementKind: string, amount: string, native = '0') => ({
  swap_tx: 'sig',
  movement_kind: movementKind,
  amount_micro: amount,
  native_amount: native,
  related_post_id: null,
  counterparty: null,
  slot: 7,
});

describe('an event’s public data', () => {
  test('a payment reads as its history entry: the type from the account’s side, signed dollars', () => {
    expect(publicEventData('payment.confirmed', staged('post', '-1000000'))).toEqual({
      swap_tx: 'sig',
      kind: 'post',
      amount_usd: -1,
      related_post_id: null,
      counterparty: null,
      slot: 7,
    });
    expect(publicEventData('payment.finalized', staged('post', '500000'))).toMatchObject({
      kind: 'earn',
      amount_usd: 0.5,
    });
    expect(publicEventData('payment.failed', staged('send', '250000'))).toMatchObject({
      kind: 'receive',
      amount_usd: 0.25,
    });
    expect(publicEventData('payment.confirmed', staged('reversal', '1000000'))).toMatchObject({
      kind: 'refund',
    });
  });

  test('a creator-fund payout moves tokens, not dollars: 0 dollars and the tokens beside them', () => {
    expect(publicEventData('payment.confirmed', staged('fund_payout', '0', '1500000000'))).toMatchObject({
      kind: 'earn',
      amount_usd: 0,
      native_tokens: '1.5',
    });
  });

  test('a send received carries dollars; other events pass through', () => {
    expect(
      publicEventData('send.received', { from: 'bob', amount_micro: '1234567', memo: null, swap_tx: 's' }),
    ).toEqual({ from: 'bob', amount_usd: 1.234567, memo: null, swap_tx: 's' });
    expect(publicEventData('post.liked', { post_id: 'p', by: 'b' })).toEqual({ post_id: 'p', by: 'b' });
  });
});
