import { gql } from './lib/api.js';
import { timeChart } from './lib/chart.js';
import { bucketStarts, rangeText, unitOf } from './lib/date-range.js';
import { dollarsForChart, usd } from './lib/format.js';
import { el, messageOf, show } from './lib/ui.js';

/*
 * The creator page's earnings over the chosen range, stacked by source: the creator's USDC share
 * of paid replies, quotes and reposts per bucket (creatorEarnings groupBy SOURCE, from ClickHouse,
 * so it trails the ledger by the shipper's few seconds), the range's total and each source's sum
 * (BigInt, exact), a stacked bar chart and the same numbers as a table. Creator-fund payouts are
 * native tokens and live in the fund panel, not in these sums.
 */

/** The sources in stack order (bottom first); `null` is a leg shipped before sources were recorded. */
const SOURCES = [
  { key: 'REPLY', id: 'reply', label: 'Replies', color: '#1f6f5c' },
  { key: 'QUOTE', id: 'quote', label: 'Quotes', color: '#c07a12' },
  { key: 'REPOST', id: 'repost', label: 'Reposts', color: '#5b5bd6' },
  { key: null, id: 'unattributed', label: 'Source not recorded', color: '#8a8f98' },
];

const QUERY = `query ($handle: String!, $from: DateTime!, $to: DateTime!, $g: EarningsGranularity!, $tz: String) {
  creatorEarnings(handle: $handle, from: $from, to: $to, granularity: $g, timezone: $tz, groupBy: SOURCE) {
    bucket source amountUsdMicro } }`;

/** How a bucket's start reads in the zone, by granularity. */
function bucketFormat(range) {
  const options = {
    HOUR: { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' },
    DAY: { dateStyle: 'medium' },
    WEEK: { dateStyle: 'medium' },
    MONTH: { year: 'numeric', month: 'long' },
  }[range.granularity];
  const format = new Intl.DateTimeFormat(undefined, { ...options, timeZone: range.timezone });
  return (ms) => (range.granularity === 'WEEK' ? `Week of ${format.format(ms)}` : format.format(ms));
}

export function earningsPanel({ handle }) {
  const totals = el('dl', { class: 'stats', id: 'earnings-totals', 'aria-live': 'polite' });
  const chartBox = el('div', { id: 'earnings-chart', 'aria-live': 'polite' });
  const tableBox = el('div', { id: 'earnings-table' });
  const element = el('div', { id: 'earnings' }, [totals, chartBox, tableBox]);
  let range = null;
  let asked = 0;

  async function load(next = range) {
    range = next;
    const mine = ++asked;
    show(chartBox, 'loading', 'Loading earnings…');
    totals.replaceChildren();
    tableBox.replaceChildren();
    let buckets;
    try {
      ({ creatorEarnings: buckets } = await gql(QUERY, {
        handle,
        from: range.from.toISOString(),
        to: range.to.toISOString(),
        g: range.granularity,
        tz: range.timezone,
      }));
    } catch (error) {
      if (mine === asked) show(chartBox, 'error', messageOf(error), () => void load());
      return;
    }
    if (mine !== asked) return; // an answer for a range no longer shown
    render(buckets);
  }

  function render(buckets) {
    // Per bucket start (ms) and source: micro-USD as BigInt.
    const byBucket = new Map(bucketStarts(range).map((t) => [t, new Map()]));
    const bySource = new Map(SOURCES.map((s) => [s.key, 0n]));
    let total = 0n;
    for (const b of buckets) {
      const t = Date.parse(b.bucket);
      if (!byBucket.has(t)) byBucket.set(t, new Map()); // never expected: the API's bucket wins
      const amount = BigInt(b.amountUsdMicro);
      const cell = byBucket.get(t);
      cell.set(b.source, (cell.get(b.source) ?? 0n) + amount);
      bySource.set(b.source, (bySource.get(b.source) ?? 0n) + amount);
      total += amount;
    }
    const shown = SOURCES.filter((s) => s.key !== null || bySource.get(null) !== 0n);
    const stat = (id, label, micro) =>
      el('div', {}, [el('dt', {}, label), el('dd', { id, 'data-micro': micro.toString() }, usd(micro))]);
    totals.replaceChildren(
      stat('earnings-total', 'Total in range', total),
      ...shown.map((s) => stat(`earnings-source-${s.id}`, s.label, bySource.get(s.key))),
    );
    totals.dataset.state = 'ready';
    if (buckets.length === 0) {
      return show(
        chartBox,
        'empty',
        'No earnings in this range. When others reply to, quote or repost your posts, your share shows here.',
      );
    }
    const times = [...byBucket.keys()].sort((a, b) => a - b);
    const label = bucketFormat(range);
    show(chartBox, 'ready', []);
    timeChart(chartBox, {
      times: times.map((t) => t / 1000),
      series: shown.map((s) => ({
        label: s.label,
        color: s.color,
        values: times.map((t) => dollarsForChart((byBucket.get(t).get(s.key) ?? 0n).toString())),
      })),
      stacked: true,
      timeZone: range.timezone,
      summary: `Earnings per ${unitOf(range.granularity)}, ${rangeText(range)}: ${usd(total.toString())} in total; ${shown
        .map((s) => `${s.label.toLowerCase()} ${usd(bySource.get(s.key).toString())}`)
        .join(', ')}.`,
      valueFormat: (v) => `$${v.toFixed(2)}`,
    });
    const withEarnings = times.filter((t) => byBucket.get(t).size > 0).reverse();
    const cells = (map) =>
      shown.map((s) =>
        el('td', { class: 'num', 'data-source': s.id }, usd((map.get(s.key) ?? 0n).toString())),
      );
    tableBox.replaceChildren(
      el('details', {}, [
        el('summary', {}, 'Show as a table'),
        el(
          'div',
          { class: 'table-wrap' },
          el('table', {}, [
            el('caption', {}, `Earnings per ${unitOf(range.granularity)} (${range.timezone}), newest first`),
            el(
              'thead',
              {},
              el('tr', {}, [
                el('th', { scope: 'col' }, 'Period'),
                ...shown.map((s) => el('th', { scope: 'col', class: 'num' }, s.label)),
                el('th', { scope: 'col', class: 'num' }, 'Total'),
              ]),
            ),
            el(
              'tbody',
              {},
              withEarnings.map((t) => {
                const map = byBucket.get(t);
                const sum = [...map.values()].reduce((a, b) => a + b, 0n);
                return el('tr', { 'data-bucket': new Date(t).toISOString() }, [
                  el('td', {}, label(t)),
                  ...cells(map),
                  el('td', { class: 'num total' }, usd(sum.toString())),
                ]);
              }),
            ),
            el(
              'tfoot',
              {},
              el('tr', {}, [
                el('th', { scope: 'row' }, 'Range'),
                ...cells(bySource),
                el('td', { class: 'num total' }, usd(total.toString())),
              ]),
            ),
          ]),
        ),
      ]),
    );
  }

  return { element, load };
}
