import { fieldsOf, gql } from './lib/api.js';
import { timeChart } from './lib/chart.js';
import { dateTime, dollarsForChart, short, usd, usdDecimal } from './lib/format.js';
import { el, initHeader, messageOf, requireKey, show } from './lib/ui.js';

/*
 * Creator dashboard: balances, earnings over time (direct engagement shares, from ClickHouse via
 * creatorEarnings), top posts (from the ledger via viewer.topPosts), recent transactions linked to
 * the block explorer, and the creator fund / swap area, shown only once the API has those fields.
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

if (requireKey(page)) void render();

async function render() {
  show(page, 'loading', 'Loading your dashboard…');
  let data;
  try {
    data = await gql(
      `{ viewer { handle earnedUsdc pendingUsdc totalEarned totalSpent } chainInfo { cluster explorerTxUrlTemplate } }`,
    );
  } catch (error) {
    return show(page, 'error', messageOf(error), () => void render());
  }
  handle = data.viewer.handle;
  explorerTemplate = data.chainInfo.explorerTxUrlTemplate;
  const v = data.viewer;
  const chartBox = el('div', { id: 'earnings-chart', 'aria-live': 'polite' });
  const tableBox = el('div', { id: 'earnings-table' });
  const topBox = el('div', { id: 'top-posts', 'aria-live': 'polite' });
  const txBox = el('div', { id: 'transactions', 'aria-live': 'polite' });
  const fundBox = el('div', { id: 'fund-area' });
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
      el('div', {}, [el('dt', {}, 'Balance'), el('dd', { id: 'balance' }, usd(v.earnedUsdc))]),
      el('div', {}, [el('dt', {}, 'Pending'), el('dd', { id: 'pending' }, usd(v.pendingUsdc))]),
      el('div', {}, [el('dt', {}, 'Total earned'), el('dd', { id: 'total-earned' }, usd(v.totalEarned))]),
      el('div', {}, [el('dt', {}, 'Total spent'), el('dd', { id: 'total-spent' }, usd(v.totalSpent))]),
    ]),
    el('section', { class: 'card', 'aria-labelledby': 'earn-title' }, [
      el('div', { class: 'section-head' }, [
        el('h2', { id: 'earn-title' }, 'Earnings over time'),
        el('div', { class: 'row' }, [toggle, refresh]),
      ]),
      el(
        'p',
        { class: 'muted' },
        'Your share of replies, quotes and reposts of your posts (creator-fund payouts will appear once the fund runs). The chart trails the ledger by a few seconds.',
      ),
      chartBox,
      tableBox,
    ]),
    el('section', { class: 'card', 'aria-labelledby': 'top-title' }, [
      el('h2', { id: 'top-title' }, 'Top posts'),
      topBox,
    ]),
    el('section', { class: 'card', 'aria-labelledby': 'tx-title' }, [
      el('h2', { id: 'tx-title' }, 'Recent transactions'),
      txBox,
    ]),
    el('section', { class: 'card placeholder', 'aria-labelledby': 'fund-title' }, [
      el('h2', { id: 'fund-title' }, 'Creator fund, native token and swap'),
      fundBox,
    ]),
  );
  async function refreshAll() {
    refresh.disabled = true;
    await Promise.all([
      loadSummary(),
      loadEarnings(chartBox, tableBox),
      loadTopPosts(topBox),
      loadTransactions(txBox),
    ]);
    refresh.disabled = false;
  }
  await Promise.all([
    loadEarnings(chartBox, tableBox),
    loadTopPosts(topBox),
    loadTransactions(txBox),
    loadFundArea(fundBox),
  ]);
}

async function loadSummary() {
  try {
    const { viewer } = await gql('{ viewer { earnedUsdc pendingUsdc totalEarned totalSpent } }');
    document.getElementById('balance').textContent = usd(viewer.earnedUsdc);
    document.getElementById('pending').textContent = usd(viewer.pendingUsdc);
    document.getElementById('total-earned').textContent = usd(viewer.totalEarned);
    document.getElementById('total-spent').textContent = usd(viewer.totalSpent);
  } catch {
    // The cards keep their last values; the sections below show the error.
  }
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
  const byBucket = new Map(
    points.map((p) => [Date.parse(`${p.bucket.replace(' ', 'T')}Z`), p.amountUsdMicro]),
  );
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

async function loadTransactions(box) {
  show(box, 'loading', 'Loading transactions…');
  let edges;
  try {
    ({
      viewer: {
        transactions: { edges },
      },
    } = await gql(
      '{ viewer { transactions(first: 20) { edges { node { id type description amountUsd swapTx createdAt counterparty } } } } }',
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
            el('th', { scope: 'col' }, 'Transaction'),
          ]),
        ),
        el(
          'tbody',
          {},
          edges.map(({ node: t }) =>
            el('tr', {}, [
              el('td', {}, dateTime(t.createdAt)),
              el('td', {}, t.type.toLowerCase()),
              el('td', { class: 'hide-narrow' }, t.description),
              el('td', { class: 'num' }, usdDecimal(t.amountUsd)),
              el('td', {}, t.swapTx ? explorerLink(t.swapTx) : '—'),
            ]),
          ),
        ),
      ]),
    ),
  );
}

/**
 * Issue 8 (creator fund payouts, native token, swap to USDC) is being built separately. The area
 * asks the schema which of its fields exist and says honestly what is not there yet, so this page
 * works before and after it lands.
 */
async function loadFundArea(box) {
  const [query, viewer] = await Promise.all([fieldsOf('Query'), fieldsOf('Viewer')]);
  // Fund payouts are native tokens: shown as the API's own decimal strings, never converted.
  let payouts = null;
  if (viewer.has('earnings')) {
    try {
      ({
        viewer: { earnings: payouts },
      } = await gql('{ viewer { earnings { fundPayoutsSettledNative fundPayoutsPendingNative } } }'));
    } catch {
      payouts = null; // The field exists but not in this shape yet: say so honestly below.
    }
  }
  const notYet = () => el('span', { class: 'badge' }, 'Not available yet');
  const items = [
    [
      'fund-status',
      'Fund payouts',
      payouts
        ? el('span', {}, [
            `${payouts.fundPayoutsSettledNative} native tokens paid`,
            payouts.fundPayoutsPendingNative !== '0' ? `, ${payouts.fundPayoutsPendingNative} pending` : '',
            query.has('creatorFundEpochs') ? ' (epochs: creatorFundEpochs in the GraphQL API)' : '',
          ])
        : notYet(),
    ],
    [
      'native-status',
      'Native-token balance',
      viewer.has('nativeBalance')
        ? el('span', {}, 'available through the GraphQL API (viewer.nativeBalance)')
        : notYet(),
    ],
    [
      'swap-status',
      'Swap to USDC',
      query.has('swapQuote')
        ? el('span', {}, [
            'available through the GraphQL API (',
            el('code', {}, 'swapQuote'),
            '); the form here arrives with the creator-fund release.',
          ])
        : notYet(),
    ],
  ];
  box.replaceChildren(
    el(
      'p',
      { class: 'muted' },
      'Creator-fund payouts (native tokens) and swapping them for USDC are arriving; this area shows them as the API gains them.',
    ),
    el(
      'ul',
      {},
      items.map(([id, label, content]) => el('li', { id }, [el('strong', {}, `${label}: `), content])),
    ),
    el('form', { id: 'swap-form', 'aria-describedby': 'swap-status' }, [
      el('label', {}, [
        'Native tokens to swap',
        el('input', { name: 'amount', inputmode: 'decimal', disabled: true, placeholder: '0.0' }),
      ]),
      el('button', { type: 'submit', disabled: true }, 'Get a quote'),
    ]),
  );
}
