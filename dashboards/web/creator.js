import { loadFundPanel } from './fund-panel.js';
import { gql } from './lib/api.js';
import { timeChart } from './lib/chart.js';
import { dateTime, dollarsForChart, short, tokens, usd, usdDecimal } from './lib/format.js';
import { el, initHeader, messageOf, requireKey, show, card } from './lib/ui.js';
import { statementsPanel } from './statements-panel.js';
import { swapForm } from './swap-form.js';

/*
 * Creator dashboard: balances (USDC and native tokens), earnings over time (direct engagement
 * shares, from ClickHouse via creatorEarnings), earnings by source and the creator fund's epochs,
 * the swap form (native tokens -> USDC), top posts (from the ledger via viewer.topPosts) and recent
 * transactions, each with the state of its chain transaction (pending, confirmed, finalized,
 * failed) and linked to the block explorer, and monthly statements (statements-panel.js).
 */

const page = document.getElementById('page');
initHeader();
const RANGES = {
  HOUR: { label: 'Last 48 hours', ms: 48 * 3_600_000 },
  DAY: { label: 'Last 30 days', ms: 30 * 86_400_000 },
};
let granularity = 'HOUR';
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
  const chartBox = el('div', { id: 'earnings-chart', 'aria-live': 'polite' });
  const tableBox = el('div', { id: 'earnings-table' });
  const topBox = el('div', { id: 'top-posts', 'aria-live': 'polite' });
  const txBox = el('div', { id: 'transactions', 'aria-live': 'polite' });
  const fundBox = el('div', { id: 'fund-area', 'aria-live': 'polite' }, [
    el('p', { class: 'state loading' }, 'Loading earnings by source…'),
  ]);
  const toggle = el(
    'div',
    { class: 'segmented', role: 'group', 'aria-label': 'Granularity' },
    Object.entries({ HOUR: 'Hourly', DAY: 'Daily' }).map(([value, label]) =>
      el(
        'button',
        {
          type: 'button',
          'data-granularity': value,
          'aria-pressed': String(value === granularity),
          onclick: () => {
            granularity = value;
            for (const b of toggle.querySelectorAll('button'))
              b.setAttribute('aria-pressed', String(b.dataset.granularity === value));
            void loadEarnings(chartBox, tableBox);
          },
        },
        label,
      ),
    ),
  );
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
      el('div', { class: 'section-head' }, [
        el('h2', { id: 'earn-title' }, 'Earnings over time'),
        el('div', { class: 'row' }, [toggle, refresh]),
      ]),
      el(
        'p',
        { class: 'muted' },
        'Your USDC share of replies, quotes and reposts of your posts (creator-fund payouts are native tokens: see "Earnings by source" below). The chart trails the ledger by a few seconds.',
      ),
      chartBox,
      tableBox,
    ]),
    // What came in by source, then what to do with the native tokens.
    card('fund', 'Earnings by source', fundBox),
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
    card('top', 'Top posts', topBox),
    card('tx', 'Recent transactions', txBox),
    statementsPanel(),
  );
  async function refreshAll() {
    refresh.disabled = true;
    await Promise.all([
      loadSummary(),
      loadEarnings(chartBox, tableBox),
      loadTopPosts(topBox),
      loadTransactions(txBox),
      loadFundPanel(fundBox, { explorerLink }),
    ]);
    refresh.disabled = false;
  }
  await Promise.all([
    loadEarnings(chartBox, tableBox),
    loadTopPosts(topBox),
    loadTransactions(txBox),
    loadFundPanel(fundBox, { explorerLink }),
  ]);
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

async function loadEarnings(chartBox, tableBox) {
  const range = RANGES[granularity];
  show(chartBox, 'loading', 'Loading earnings…');
  tableBox.replaceChildren();
  const step = granularity === 'HOUR' ? 3_600_000 : 86_400_000;
  const to = new Date(Math.ceil((Date.now() + 1) / step) * step);
  const from = new Date(to.getTime() - range.ms);
  let points;
  try {
    ({ creatorEarnings: points } = await gql(
      `query ($handle: String!, $from: DateTime!, $to: DateTime!, $g: EarningsGranularity!) {
         creatorEarnings(handle: $handle, from: $from, to: $to, granularity: $g) { bucket amountUsdMicro } }`,
      { handle, from: from.toISOString(), to: to.toISOString(), g: granularity },
    ));
  } catch (error) {
    return show(chartBox, 'error', messageOf(error), () => void loadEarnings(chartBox, tableBox));
  }
  if (points.length === 0) {
    return show(
      chartBox,
      'empty',
      `No earnings in the ${range.label.toLowerCase()} yet. When others reply to, quote or repost your posts, your share shows here.`,
    );
  }
  // Every bucket of the range, zeros included, so the line does not bridge quiet hours.
  // bucket: an ISO 8601 UTC instant (the start of the hour or day; UTC here: no timezone asked).
  const byBucket = new Map(points.map((p) => [Date.parse(p.bucket), p.amountUsdMicro]));
  const times = [];
  const values = [];
  for (let t = from.getTime(); t < to.getTime(); t += step) {
    times.push(t / 1000);
    values.push(dollarsForChart(byBucket.get(t) ?? '0'));
  }
  const total = points.reduce((sum, p) => sum + BigInt(p.amountUsdMicro), 0n);
  show(chartBox, 'ready', []);
  timeChart(chartBox, {
    times,
    series: [{ label: 'Earned (USD)', values, color: '#1f6f5c', fill: 'rgba(31,111,92,0.12)' }],
    summary: `Earnings ${range.label.toLowerCase()}, ${granularity === 'HOUR' ? 'per hour' : 'per day'}: ${usd(total.toString())} in total over ${points.length} ${granularity === 'HOUR' ? 'hours' : 'days'} with earnings.`,
    valueFormat: (v) => `$${v.toFixed(2)}`,
  });
  tableBox.replaceChildren(
    el('details', {}, [
      el('summary', {}, 'Show as a table'),
      el(
        'div',
        { class: 'table-wrap' },
        el('table', {}, [
          el('caption', {}, `Earnings per ${granularity === 'HOUR' ? 'hour' : 'day'} (UTC buckets)`),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col' }, 'Period'),
              el('th', { scope: 'col', class: 'num' }, 'Earned'),
            ]),
          ),
          el(
            'tbody',
            {},
            points
              .slice()
              .reverse()
              .map((p) =>
                el('tr', {}, [
                  el('td', {}, dateTime(p.bucket)),
                  el('td', { class: 'num' }, usd(p.amountUsdMicro)),
                ]),
              ),
          ),
        ]),
      ),
    ]),
  );
}

async function loadTopPosts(box) {
  show(box, 'loading', 'Loading your posts…');
  let data;
  try {
    data = await gql(`{ viewer {
      byEarnings: topPosts(by: EARNINGS, first: 5) { postId type content earnedUsdMicro likes replies quotes reposts }
      byEngagement: topPosts(by: ENGAGEMENT, first: 5) { postId type content earnedUsdMicro likes replies quotes reposts } } }`);
  } catch (error) {
    return show(box, 'error', messageOf(error), () => void loadTopPosts(box));
  }
  const { byEarnings, byEngagement } = data.viewer;
  if (byEarnings.length === 0)
    return show(box, 'empty', 'No posts yet. Your best posts show here once you post.');
  const table = (id, caption, rows) =>
    el(
      'div',
      { class: 'table-wrap' },
      el('table', { id }, [
        el('caption', {}, caption),
        el(
          'thead',
          {},
          el('tr', {}, [
            el('th', { scope: 'col' }, 'Post'),
            el('th', { scope: 'col', class: 'num' }, 'Earned'),
            el('th', { scope: 'col', class: 'num' }, 'Likes'),
            el('th', { scope: 'col', class: 'num' }, 'Replies'),
            el('th', { scope: 'col', class: 'num hide-narrow' }, 'Quotes'),
            el('th', { scope: 'col', class: 'num hide-narrow' }, 'Reposts'),
          ]),
        ),
        el(
          'tbody',
          {},
          rows.map((p) =>
            el('tr', { 'data-post-id': p.postId }, [
              el('td', {}, p.content.length > 80 ? `${p.content.slice(0, 80)}…` : p.content),
              el('td', { class: 'num earned' }, usd(p.earnedUsdMicro)),
              el('td', { class: 'num' }, p.likes),
              el('td', { class: 'num' }, p.replies),
              el('td', { class: 'num hide-narrow' }, p.quotes),
              el('td', { class: 'num hide-narrow' }, p.reposts),
            ]),
          ),
        ),
      ]),
    );
  show(
    box,
    'ready',
    el('div', { class: 'grid' }, [
      table('top-by-earnings', 'By earnings', byEarnings),
      table('top-by-engagement', 'By engagement (likes, replies, quotes, reposts)', byEngagement),
    ]),
  );
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

/** How each TransactionStatus reads: a word, its tone and what it means (the badge's tooltip). */
const STATES = {
  PENDING: { label: 'pending', tone: 'pending', title: 'Sent, not confirmed on chain yet' },
  CONFIRMED: { label: 'confirmed', tone: '', title: 'Confirmed on chain, not final yet' },
  FINALIZED: { label: 'finalized', tone: 'good', title: 'Final on chain' },
  FAILED: { label: 'failed', tone: 'bad', title: 'Failed on chain: the money went back' },
};

/** The state of a money move's transaction as a small badge; a dash for one without a transaction. */
function stateBadge(status) {
  const state = STATES[status];
  if (!state) return '—';
  return el(
    'span',
    { class: `badge tx-state ${state.tone}`.trim(), 'data-status': status.toLowerCase(), title: state.title },
    state.label,
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
