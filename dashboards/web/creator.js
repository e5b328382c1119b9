import { audiencePanel } from './audience-panel.js';
import { rangePicker } from './date-range-picker.js';
import { earningsPanel } from './earnings-panel.js';
import { loadFundPanel } from './fund-panel.js';
import { gql } from './lib/api.js';
import { choiceFromQuery } from './lib/date-range.js';
import { dateTime, short, tokens, usd, usdDecimal } from './lib/format.js';
import { stateBadge } from './lib/tx-state.js';
import { el, initHeader, messageOf, requireKey, show, card } from './lib/ui.js';
import { postEarningsTable } from './post-earnings-table.js';
import { statementsPanel } from './statements-panel.js';
import { swapForm } from './swap-form.js';

/*
 * Creator dashboard: balances (USDC and native tokens); over a chosen range and time zone
 * (date-range-picker.js, kept in the address) the earnings stacked by source (earnings-panel.js),
 * every post's earnings and engagement (post-earnings-table.js) and the audience
 * (audience-panel.js); the creator fund's epochs with the viewer's share of each (fund-panel.js),
 * the swap form (native tokens -> USDC), recent transactions, each with the state of its chain
 * transaction (pending, confirmed, finalized, failed) and linked to the block explorer, and monthly
 * statements (statements-panel.js).
 */

const page = document.getElementById('page');
initHeader();
let handle;
let explorerTemplate;
/** The native balance last read (base units, BigInt), for the swap form's own checks. */
let nativeAvailable = null;
const SUMMARY_FIELDS = 'earnedUsdc pendingUsdc totalEarned totalSpent nativeTokens';

if (requireKey(page)) void render();

async function render() {
  show(page, 'loading', 'Loading your dashboard…');
  let data;
  try {
    data = await gql(`{ viewer { handle ${SUMMARY_FIELDS} } chainInfo { cluster explorerTxUrlTemplate } }`);
  } catch (error) {
    return show(page, 'error', messageOf(error), () => void render());
  }
  handle = data.viewer.handle;
  explorerTemplate = data.chainInfo.explorerTxUrlTemplate;
  const v = data.viewer;
  nativeAvailable = BigInt(v.nativeTokens);
  const earnings = earningsPanel({ handle });
  const posts = postEarningsTable({ handle });
  const audience = audiencePanel({ handle });
  let range = null;
  const picker = rangePicker({
    initial: choiceFromQuery(location.search),
    onChange: (next) => {
      range = next;
      void Promise.all([earnings.load(range), posts.setRange(range), audience.load(range)]);
    },
  });
  const txBox = el('div', { id: 'transactions', 'aria-live': 'polite' });
  const fundBox = el('div', { id: 'fund-area', 'aria-live': 'polite' }, [
    el('p', { class: 'state loading' }, 'Loading earnings by source…'),
  ]);
  const refresh = el(
    'button',
    { type: 'button', class: 'secondary', id: 'refresh', onclick: () => void refreshAll() },
    'Refresh',
  );
  page.replaceChildren(
    el('dl', { class: 'stats', id: 'summary' }, [
      el('div', {}, [el('dt', {}, 'USDC balance'), el('dd', { id: 'balance' }, usd(v.earnedUsdc))]),
      el('div', {}, [el('dt', {}, 'Pending'), el('dd', { id: 'pending' }, usd(v.pendingUsdc))]),
      el('div', {}, [el('dt', {}, 'Total earned'), el('dd', { id: 'total-earned' }, usd(v.totalEarned))]),
      el('div', {}, [el('dt', {}, 'Total spent'), el('dd', { id: 'total-spent' }, usd(v.totalSpent))]),
      el('div', {}, [
        el('dt', {}, 'Native tokens'),
        el('dd', { id: 'native-balance' }, tokens(v.nativeTokens)),
      ]),
    ]),
    el('section', { class: 'card', 'aria-labelledby': 'earn-title' }, [
      el('div', { class: 'section-head' }, [el('h2', { id: 'earn-title' }, 'Earnings'), refresh]),
      picker.element,
      el(
        'p',
        { class: 'muted' },
        'Your USDC share of replies, quotes and reposts of your posts, by source (creator-fund payouts are native tokens: see "Direct shares and the creator fund" below). Trails the ledger by a few seconds.',
      ),
      earnings.element,
    ]),
    card('posts', 'Your posts', posts.element),
    card('audience', 'Audience', audience.element),
    // USDC shares beside native-token fund payouts, then what to do with the native tokens.
    card('fund', 'Direct shares and the creator fund', fundBox),
    el('section', { class: 'card', 'aria-labelledby': 'swap-title', id: 'swap' }, [
      el('h2', { id: 'swap-title' }, 'Swap native tokens to USDC'),
      swapForm({
        available: () => nativeAvailable,
        explorerLink,
        onSwapped: async (swap) => {
          await Promise.all([loadSummary(), loadTransactions(txBox)]);
          // In the background: the form is usable again at once.
          if (swap) void followSwap(swap.swapTx);
        },
      }),
    ]),
    card('tx', 'Recent transactions', txBox),
    statementsPanel(),
  );
  async function refreshAll() {
    refresh.disabled = true;
    await Promise.all([
      loadSummary(),
      range && earnings.load(range),
      range && posts.reload(),
      range && audience.load(range),
      loadTransactions(txBox),
      loadFundPanel(fundBox, { explorerLink }),
    ]);
    refresh.disabled = false;
  }
  picker.start();
  await Promise.all([loadTransactions(txBox), loadFundPanel(fundBox, { explorerLink })]);
}

/** Re-reads the balance cards; answers the viewer read, or null when it failed. */
async function loadSummary() {
  try {
    const { viewer } = await gql(`{ viewer { ${SUMMARY_FIELDS} } }`);
    showSummary(viewer);
    return viewer;
  } catch {
    // The cards keep their last values; the sections below show the error.
    return null;
  }
}

function showSummary(viewer) {
  nativeAvailable = BigInt(viewer.nativeTokens);
  document.getElementById('balance').textContent = usd(viewer.earnedUsdc);
  document.getElementById('pending').textContent = usd(viewer.pendingUsdc);
  document.getElementById('total-earned').textContent = usd(viewer.totalEarned);
  document.getElementById('total-spent').textContent = usd(viewer.totalSpent);
  document.getElementById('native-balance').textContent = tokens(viewer.nativeTokens);
}

/** States a transaction does not leave. */
const FINAL_STATES = new Set(['FINALIZED', 'FAILED']);
/** How long the page follows a swap on its own: seconds of 1 s re-reads, then of 3 s ones. */
const FOLLOW_FAST_MS = 20_000;
const FOLLOW_MAX_MS = 60_000;
/** The swaps being followed (a double submit answers the same swap twice: follow it once). */
const followed = new Set();

/**
 * A swap's USDC is held as pending until its transaction confirms (seconds), and its row in the
 * transactions shows that transaction's state. Re-read both with one query a tick (GraphQL
 * `payment(swapTx)` beside the cards) so the balance and the row's badge move on their own, without
 * a click on Refresh: each second for 20 s, then every 3 s until the transaction is final, for at
 * most a minute (about 35 reads, of the 60 a minute the read budget allows).
 */
async function followSwap(swapTx) {
  if (followed.has(swapTx)) return;
  followed.add(swapTx);
  const started = Date.now();
  try {
    for (;;) {
      let data = null;
      try {
        data = await gql(
          `query ($tx: String!) { viewer { ${SUMMARY_FIELDS} } payment(swapTx: $tx) { id status } }`,
          { tx: swapTx },
        );
      } catch {
        // A failed read changes nothing on the page; the next tick tries again.
      }
      if (data) {
        showSummary(data.viewer);
        if (data.payment) showTransactionState(data.payment.id, data.payment.status);
        if (data.payment && FINAL_STATES.has(data.payment.status)) return;
      }
      const elapsed = Date.now() - started;
      if (elapsed >= FOLLOW_MAX_MS) return;
      await new Promise((resolve) => setTimeout(resolve, elapsed < FOLLOW_FAST_MS ? 1_000 : 3_000));
    }
  } finally {
    followed.delete(swapTx);
  }
}

/** Redraws the state badge of the transaction row `id`, when the list shows it. */
function showTransactionState(id, status) {
  const badge = document.querySelector(`#tx-table tr[data-id="${CSS.escape(id)}"] .tx-state`);
  if (badge && badge.dataset.status !== status.toLowerCase()) badge.replaceWith(stateBadge(status));
}

function explorerLink(signature) {
  return el(
    'a',
    {
      href: explorerTemplate.replace('{signature}', encodeURIComponent(signature)),
      rel: 'noreferrer noopener',
      target: '_blank',
      class: 'mono',
      title: signature,
    },
    [short(signature), el('span', { class: 'muted' }, ' ↗')],
  );
}

async function loadTransactions(box) {
  show(box, 'loading', 'Loading transactions…');
  let edges;
  try {
    ({
      viewer: {
        transactions: { edges },
      },
    } = await gql(
      '{ viewer { transactions(first: 20) { edges { node { id type description amountUsd swapTx createdAt counterparty status } } } } }',
    ));
  } catch (error) {
    return show(box, 'error', messageOf(error), () => void loadTransactions(box));
  }
  if (edges.length === 0) return show(box, 'empty', 'No transactions yet.');
  show(
    box,
    'ready',
    el(
      'div',
      { class: 'table-wrap' },
      el('table', { id: 'tx-table' }, [
        el('caption', {}, 'Your latest 20 money movements; the signature opens the block explorer'),
        el(
          'thead',
          {},
          el('tr', {}, [
            el('th', { scope: 'col' }, 'When'),
            el('th', { scope: 'col' }, 'Type'),
            el('th', { scope: 'col', class: 'hide-narrow' }, 'Description'),
            el('th', { scope: 'col', class: 'num' }, 'Amount'),
            el('th', { scope: 'col' }, 'State'),
            el('th', { scope: 'col' }, 'Transaction'),
          ]),
        ),
        el(
          'tbody',
          {},
          edges.map(({ node: t }) =>
            el('tr', { 'data-id': t.id }, [
              el('td', {}, dateTime(t.createdAt)),
              el('td', {}, t.type.toLowerCase()),
              el('td', { class: 'hide-narrow' }, t.description),
              el('td', { class: 'num' }, usdDecimal(t.amountUsd)),
              el('td', {}, stateBadge(t.status)),
              el('td', {}, t.swapTx ? explorerLink(t.swapTx) : '—'),
            ]),
          ),
        ),
      ]),
    ),
  );
}
