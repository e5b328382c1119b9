import { gql } from './lib/api.js';
import { dateTime, tokensDecimal, usd } from './lib/format.js';
import { stateBadge } from './lib/tx-state.js';
import { el, messageOf } from './lib/ui.js';

/*
 * The creator dashboard's earnings-by-source panel: direct engagement shares (USDC) next to
 * creator-fund payouts (native tokens), from viewer.earnings, and the fund's latest epochs
 * (creatorFundEpochs), each with the viewer's own share of it (myShare: tokens, the engagement
 * score it was computed from out of the epoch's total, the payout batch's swap_tx and its state)
 * beside what the fund paid all authors. Each part is asked for on its own, so a field that errors shows an honest
 * "Not available" there and leaves the other part alone.
 */

const EPOCHS_SHOWN = 5;

const STATUS_TEXT = {
  SENDING: ['sending', ''],
  PAID: ['paid', 'good'],
  PARTLY_FAILED: ['partly failed', 'bad'],
  NO_ENGAGEMENT: ['no engagement', ''],
  UNFUNDED: ['fund empty', 'bad'],
};

function notAvailable(id, error) {
  return el('div', { id, 'data-state': 'unavailable' }, [
    el('span', { class: 'badge' }, 'Not available'),
    el('span', { class: 'muted' }, ` ${messageOf(error)}`),
  ]);
}

async function earningsSplit() {
  let earnings;
  try {
    ({
      viewer: { earnings },
    } = await gql(`{ viewer { earnings {
      directSharesSettledUsdMicro directSharesPendingUsdMicro fundPayoutsSettledNative fundPayoutsPendingNative } } }`));
  } catch (error) {
    return notAvailable('earnings-split', error);
  }
  const pending = (text) => el('dd', { class: 'muted pending' }, text);
  return el('dl', { class: 'stats', id: 'earnings-split', 'data-state': 'ready' }, [
    el('div', {}, [
      el('dt', {}, 'Direct shares (USDC)'),
      el('dd', { id: 'direct-settled' }, usd(earnings.directSharesSettledUsdMicro)),
      earnings.directSharesPendingUsdMicro !== '0'
        ? pending(`+ ${usd(earnings.directSharesPendingUsdMicro)} pending`)
        : null,
    ]),
    el('div', {}, [
      el('dt', {}, 'Fund payouts (native tokens)'),
      el('dd', { id: 'fund-settled' }, tokensDecimal(earnings.fundPayoutsSettledNative)),
      earnings.fundPayoutsPendingNative !== '0'
        ? pending(`+ ${tokensDecimal(earnings.fundPayoutsPendingNative)} pending`)
        : null,
    ]),
  ]);
}

async function recentEpochs(explorerLink) {
  let epochs;
  try {
    ({ creatorFundEpochs: epochs } = await gql(
      `query ($n: Int!) { creatorFundEpochs(limit: $n) {
         start end budgetNative paidNative authorCount status note batchSignatures
         myShare { tokensNative score epochScore swapTx status } } }`,
      { n: EPOCHS_SHOWN },
    ));
  } catch (error) {
    return notAvailable('fund-epochs', error);
  }
  if (epochs.length === 0) {
    return el(
      'p',
      { id: 'fund-epochs', class: 'state empty', 'data-state': 'empty' },
      'The creator fund has not run an epoch yet.',
    );
  }
  return el(
    'div',
    { class: 'table-wrap', id: 'fund-epochs', 'data-state': 'ready' },
    el('table', {}, [
      el(
        'caption',
        {},
        `The fund's latest ${EPOCHS_SHOWN} epochs, newest first: your share beside what the fund paid all authors`,
      ),
      el(
        'thead',
        {},
        el('tr', {}, [
          el('th', { scope: 'col' }, 'Epoch'),
          el('th', { scope: 'col' }, 'Status'),
          el('th', { scope: 'col' }, 'Your share (tokens)'),
          el('th', { scope: 'col', class: 'num' }, 'Fund paid (tokens)'),
          el('th', { scope: 'col', class: 'num hide-narrow' }, 'Budget'),
          el('th', { scope: 'col', class: 'num hide-narrow' }, 'Authors'),
          el('th', { scope: 'col', class: 'hide-narrow' }, 'Batches'),
        ]),
      ),
      el(
        'tbody',
        {},
        epochs.map((e) => {
          const [text, tone] = STATUS_TEXT[e.status] ?? [e.status.toLowerCase(), ''];
          return el('tr', { 'data-start': e.start }, [
            el('td', {}, `${dateTime(e.start)} – ${dateTime(e.end)}`),
            el('td', {}, [
              el('span', { class: `badge ${tone}`.trim() }, text),
              e.note ? el('div', { class: 'muted' }, e.note) : null,
            ]),
            el('td', { class: 'my-share' }, myShare(e.myShare, explorerLink)),
            el('td', { class: 'num' }, tokensDecimal(e.paidNative)),
            el('td', { class: 'num hide-narrow' }, tokensDecimal(e.budgetNative)),
            el('td', { class: 'num hide-narrow' }, e.authorCount),
            el(
              'td',
              { class: 'hide-narrow' },
              e.batchSignatures.length === 0
                ? '—'
                : e.batchSignatures.flatMap((s, i) => (i === 0 ? [explorerLink(s)] : [' ', explorerLink(s)])),
            ),
          ]);
        }),
      ),
    ]),
  );
}

/** The viewer's share of an epoch: tokens, score of the epoch's score, the payout and its state. */
function myShare(share, explorerLink) {
  if (!share) return el('span', { class: 'muted' }, 'none');
  return [
    el('div', { class: 'share-tokens' }, tokensDecimal(share.tokensNative)),
    el(
      'div',
      { class: 'muted share-score', title: 'Your engagement score of the epoch’s total score' },
      `score ${share.score} of ${share.epochScore}`,
    ),
    el('div', { class: 'row share-payout' }, [explorerLink(share.swapTx), stateBadge(share.status)]),
  ];
}

/** Fills `box` with the split and the epochs (each loads and fails on its own). */
export async function loadFundPanel(box, { explorerLink }) {
  box.setAttribute('aria-busy', 'true');
  const [split, epochs] = await Promise.all([earningsSplit(), recentEpochs(explorerLink)]);
  box.replaceChildren(
    split,
    el('h3', {}, 'Creator fund epochs'),
    el(
      'p',
      { class: 'muted' },
      'Each epoch the fund pays authors native tokens by their posts’ engagement; swap them for USDC below.',
    ),
    epochs,
  );
  box.setAttribute('aria-busy', 'false');
}
