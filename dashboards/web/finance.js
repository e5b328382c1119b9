import { gql, rest } from './lib/api.js';
import { timeChart } from './lib/chart.js';
import { dateTime, dollarsForChart, short, usd, utcDay } from './lib/format.js';
import { el, initHeader, messageOf, requireKey, show } from './lib/ui.js';
import { periodsPanel } from './periods-panel.js';
import { reportsPanel } from './reports-panel.js';

/*
 * Finance dashboard (finance or admin role): ledger vs chain per day (reconciliationSummary), the
 * verdict counts, the payments by outbox state (pending, confirmed, finalized, failed), the
 * exception list with filters (reconciliationExceptions), the day's CSV report
 * (GET /api/v1/finance/reconciliation, Accept: text/csv), one click into a transaction's
 * movements (chainTransaction), report runs (reports-panel.js) and closing periods
 * (periods-panel.js). The exception filters can be set by the address: #exceptions?status=MISSING
 * (&day=YYYY-MM-DD), which is how a period's blockers link to them.
 */

const page = document.getElementById('page');
initHeader();
const STATUSES = [
  'AMOUNT_MISMATCH',
  'WRONG_PARTY',
  'FAILED_ON_CHAIN',
  'MISSING',
  'PENDING',
  'UNEXPLAINED',
  'BALANCE_MISMATCH',
  'NOT_FINALIZED',
];
const COUNT_FIELDS = {
  amountMismatch: 'AMOUNT_MISMATCH',
  wrongParty: 'WRONG_PARTY',
  failedOnChain: 'FAILED_ON_CHAIN',
  missing: 'MISSING',
  pending: 'PENDING',
  unexplained: 'UNEXPLAINED',
  balanceMismatch: 'BALANCE_MISMATCH',
  notFinalized: 'NOT_FINALIZED',
};
/** The payments of the range by outbox state, as the outbox is now (pending: signed or sent). */
const PAYMENT_STATES = ['pending', 'confirmed', 'finalized', 'failed'];
const label = (status) => status.toLowerCase().replaceAll('_', ' ');
let explorerTemplate = '';

if (requireKey(page)) void render();

async function render() {
  show(page, 'loading', 'Loading…');
  let data;
  try {
    data = await gql('{ viewer { role } chainInfo { explorerTxUrlTemplate } }');
  } catch (error) {
    return show(page, 'error', messageOf(error), () => void render());
  }
  if (data.viewer.role !== 'FINANCE' && data.viewer.role !== 'ADMIN') {
    return show(
      page,
      'error',
      'This dashboard is for the finance role. Ask an operator: npm run cli -- accounts create <handle> --role finance.',
    );
  }
  explorerTemplate = data.chainInfo.explorerTxUrlTemplate;
  const today = new Date();
  const rangeForm = el('form', { class: 'row', id: 'range-form', 'aria-label': 'Date range' }, [
    el('label', {}, [
      'From',
      el('input', {
        type: 'date',
        name: 'from',
        value: utcDay(new Date(today.getTime() - 13 * 86_400_000)),
        required: true,
      }),
    ]),
    el('label', {}, ['To', el('input', { type: 'date', name: 'to', value: utcDay(today), required: true })]),
    el('button', { type: 'submit' }, 'Show'),
  ]);
  const summaryBox = el('div', { id: 'summary', 'aria-live': 'polite' });
  const filterForm = el(
    'form',
    { class: 'row', id: 'exception-filters', 'aria-label': 'Exception filters' },
    [
      el('label', {}, [
        'Status',
        el('select', { name: 'status' }, [
          el('option', { value: '' }, 'Every exception'),
          ...STATUSES.map((s) => el('option', { value: s }, label(s))),
        ]),
      ]),
      el('label', {}, ['Ledger day', el('input', { type: 'date', name: 'day' })]),
      el('button', { type: 'submit' }, 'Filter'),
      el(
        'button',
        {
          type: 'button',
          class: 'secondary',
          id: 'export-csv',
          onclick: () => void exportCsv(filterForm, csvStatus),
        },
        'Export day as CSV',
      ),
    ],
  );
  const csvStatus = el('div', { 'aria-live': 'polite' });
  const exceptionsBox = el('div', { id: 'exceptions', 'aria-live': 'polite' });
  const drillBox = el('section', {
    class: 'card',
    id: 'drill-down',
    'aria-labelledby': 'drill-title',
    hidden: true,
  });
  page.replaceChildren(
    el('section', { class: 'card', 'aria-labelledby': 'daily-title' }, [
      el('div', { class: 'section-head' }, [
        el('h2', { id: 'daily-title' }, 'Ledger vs chain, per day'),
        rangeForm,
      ]),
      summaryBox,
    ]),
    el('section', { class: 'card', 'aria-labelledby': 'exc-title' }, [
      el('h2', { id: 'exc-title' }, 'Exceptions'),
      filterForm,
      el(
        'p',
        { class: 'muted' },
        'The CSV holds every verdict of the chosen ledger day (today when none is chosen), matched ones included: the file finance keeps. Payments not finalized 5 minutes after signing are listed here, from the outbox, not in the file.',
      ),
      csvStatus,
      exceptionsBox,
    ]),
    drillBox,
    reportsPanel(),
    periodsPanel({ role: data.viewer.role, exceptionsLink }),
  );
  /** Sets the exception filters from `#exceptions?status=…&day=…`; false when the hash is another. */
  function filtersFromHash() {
    const match = /^#exceptions(?:\?(.*))?$/.exec(location.hash);
    if (!match) return false;
    const params = new URLSearchParams(match[1] ?? '');
    const status = (params.get('status') ?? '').toUpperCase();
    filterForm.elements.status.value = STATUSES.includes(status) ? status : '';
    filterForm.elements.day.value = params.get('day') ?? '';
    return true;
  }
  function showFilteredExceptions() {
    void loadExceptions(filterForm, exceptionsBox, drillBox);
    exceptionsBox.closest('section').scrollIntoView({ block: 'start' });
  }
  /**
   * A link to the exception list filtered to a blocker's status (the API's lower-case name) and,
   * for a day period, its day. A status the filter does not know links to the whole list.
   */
  function exceptionsLink(status, day) {
    const params = new URLSearchParams();
    if (STATUSES.includes(status.toUpperCase())) params.set('status', status.toUpperCase());
    if (day) params.set('day', day);
    const href = `#exceptions${params.size ? `?${params}` : ''}`;
    return {
      href,
      // The same link clicked twice changes no hash, so the click applies the filters itself.
      onclick: (event) => {
        event.preventDefault();
        history.pushState(null, '', href);
        filtersFromHash();
        showFilteredExceptions();
      },
    };
  }
  filtersFromHash();
  addEventListener('hashchange', () => {
    if (filtersFromHash()) showFilteredExceptions();
  });
  rangeForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void loadSummary(rangeForm, summaryBox);
  });
  filterForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void loadExceptions(filterForm, exceptionsBox, drillBox);
  });
  await Promise.all([
    loadSummary(rangeForm, summaryBox),
    loadExceptions(filterForm, exceptionsBox, drillBox),
  ]);
}

async function loadSummary(form, box) {
  const from = form.elements.from.value;
  const to = form.elements.to.value;
  show(box, 'loading', 'Loading daily totals…');
  let days;
  try {
    ({ reconciliationSummary: days } = await gql(
      `query ($from: String!, $to: String!) { reconciliationSummary(from: $from, to: $to) {
         day ledgerTotalUsdMicro chainTotalUsdMicro matched
         exceptions { amountMismatch wrongParty failedOnChain missing pending unexplained balanceMismatch notFinalized }
         payments { pending confirmed finalized failed } } }`,
      { from, to },
    ));
  } catch (error) {
    return show(box, 'error', messageOf(error), () => void loadSummary(form, box));
  }
  if (days.length === 0) return show(box, 'empty', `Nothing reconciled between ${from} and ${to}.`);
  const totals = { MATCHED: 0, ...Object.fromEntries(STATUSES.map((s) => [s, 0])) };
  const payments = Object.fromEntries(PAYMENT_STATES.map((s) => [s, 0]));
  for (const d of days) {
    totals.MATCHED += d.matched;
    for (const [field, status] of Object.entries(COUNT_FIELDS)) totals[status] += d.exceptions[field];
    for (const state of PAYMENT_STATES) payments[state] += d.payments[state];
  }
  const chartBox = el('div');
  const exceptionsOf = (d) => Object.values(d.exceptions).reduce((a, b) => a + b, 0);
  show(box, 'ready', [
    el(
      'dl',
      { class: 'stats', id: 'status-counts' },
      Object.entries(totals).map(([status, n]) =>
        el('div', { 'data-status': status }, [el('dt', {}, label(status)), el('dd', {}, n)]),
      ),
    ),
    el('h3', { id: 'payment-counts-title' }, 'Payments by state (outbox, now)'),
    el(
      'dl',
      { class: 'stats', id: 'payment-counts', 'aria-labelledby': 'payment-counts-title' },
      PAYMENT_STATES.map((state) =>
        el('div', { 'data-state': state }, [el('dt', {}, state), el('dd', {}, payments[state])]),
      ),
    ),
    chartBox,
    el(
      'div',
      { class: 'table-wrap' },
      el('table', { id: 'daily-table' }, [
        el('caption', {}, 'Per ledger day (UTC)'),
        el(
          'thead',
          {},
          el('tr', {}, [
            el('th', { scope: 'col' }, 'Day'),
            el('th', { scope: 'col', class: 'num' }, 'Ledger'),
            el('th', { scope: 'col', class: 'num' }, 'Chain'),
            el('th', { scope: 'col', class: 'num' }, 'Difference'),
            el('th', { scope: 'col', class: 'num' }, 'Matched'),
            el('th', { scope: 'col', class: 'num' }, 'Exceptions'),
          ]),
        ),
        el(
          'tbody',
          {},
          days
            .slice()
            .reverse()
            .map((d) => {
              const diff = BigInt(d.ledgerTotalUsdMicro) - BigInt(d.chainTotalUsdMicro);
              const n = exceptionsOf(d);
              return el('tr', { 'data-day': d.day }, [
                el('td', {}, d.day),
                el('td', { class: 'num' }, usd(d.ledgerTotalUsdMicro)),
                el('td', { class: 'num' }, usd(d.chainTotalUsdMicro)),
                el(
                  'td',
                  { class: 'num' },
                  diff === 0n
                    ? el('span', { class: 'badge good' }, 'even')
                    : el('span', { class: 'badge bad' }, usd(diff.toString())),
                ),
                el('td', { class: 'num' }, d.matched),
                el('td', { class: 'num' }, n === 0 ? '0' : el('span', { class: 'badge bad' }, n)),
              ]);
            }),
        ),
      ]),
    ),
  ]);
  // Every day of the range, quiet days as zero, so the axis shows the range that was asked for.
  const byDay = new Map(days.map((d) => [d.day, d]));
  const times = [];
  const ledger = [];
  const chain = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const d = byDay.get(utcDay(new Date(t)));
    times.push(t / 1000);
    ledger.push(dollarsForChart(d?.ledgerTotalUsdMicro ?? '0'));
    chain.push(dollarsForChart(d?.chainTotalUsdMicro ?? '0'));
  }
  timeChart(chartBox, {
    times,
    series: [
      { label: 'Ledger (USD)', values: ledger, color: '#1f6f5c' },
      { label: 'Chain (USD)', values: chain, color: '#c2410c' },
    ],
    summary: `Ledger and chain totals per day from ${from} to ${to}; ${days.filter((d) => d.ledgerTotalUsdMicro !== d.chainTotalUsdMicro).length} of ${days.length} days with activity differ.`,
    valueFormat: (v) => `$${v.toFixed(2)}`,
  });
}

async function loadExceptions(form, box, drillBox, after, rowsSoFar = []) {
  const status = form.elements.status.value || null;
  const day = form.elements.day.value || null;
  if (!after) show(box, 'loading', 'Loading exceptions…');
  let page;
  try {
    ({ reconciliationExceptions: page } = await gql(
      `query ($status: ReconciliationStatus, $day: String, $after: String) {
         reconciliationExceptions(status: $status, day: $day, first: 50, after: $after) {
           edges { node { movementId signature day status ledgerAmountUsdMicro chainAmountUsdMicro commitment detail checkedAt } }
           pageInfo { hasNextPage endCursor } } }`,
      { status, day, after: after ?? null },
    ));
  } catch (error) {
    return show(box, 'error', messageOf(error), () => void loadExceptions(form, box, drillBox));
  }
  const rows = rowsSoFar.concat(page.edges.map((e) => e.node));
  if (rows.length === 0) {
    return show(
      box,
      'empty',
      status || day
        ? 'No exception matches these filters.'
        : 'No exceptions: every reconciled transaction matches the ledger.',
    );
  }
  const more = page.pageInfo.hasNextPage
    ? el(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => void loadExceptions(form, box, drillBox, page.pageInfo.endCursor, rows),
        },
        'Load more',
      )
    : null;
  show(box, 'ready', [
    el(
      'div',
      { class: 'table-wrap' },
      el('table', { id: 'exceptions-table' }, [
        el('caption', {}, `${rows.length} exception${rows.length === 1 ? '' : 's'}, newest day first`),
        el(
          'thead',
          {},
          el('tr', {}, [
            el('th', { scope: 'col' }, 'Day'),
            el('th', { scope: 'col' }, 'Status'),
            el('th', { scope: 'col', class: 'num' }, 'Ledger'),
            el('th', { scope: 'col', class: 'num' }, 'Chain'),
            el('th', { scope: 'col', class: 'hide-narrow' }, 'Detail'),
            el('th', { scope: 'col' }, 'Transaction'),
          ]),
        ),
        el(
          'tbody',
          {},
          rows.map((r) =>
            el('tr', { 'data-signature': r.signature }, [
              el('td', {}, r.day),
              el('td', {}, el('span', { class: 'badge bad' }, label(r.status))),
              el('td', { class: 'num' }, usd(r.ledgerAmountUsdMicro)),
              el('td', { class: 'num' }, usd(r.chainAmountUsdMicro)),
              el('td', { class: 'hide-narrow' }, r.detail),
              el(
                'td',
                {},
                r.signature
                  ? el(
                      'button',
                      {
                        type: 'button',
                        class: 'secondary drill',
                        'aria-label': `Movements of ${r.signature}`,
                        onclick: () => void drillDown(r.signature, drillBox),
                      },
                      short(r.signature),
                    )
                  : '—',
              ),
            ]),
          ),
        ),
      ]),
    ),
    more,
  ]);
}

async function drillDown(signature, box) {
  box.hidden = false;
  const body = el('div', { 'aria-live': 'polite' });
  box.replaceChildren(
    el('div', { class: 'section-head' }, [
      el('h2', { id: 'drill-title' }, 'Transaction'),
      el('button', { type: 'button', class: 'secondary', onclick: () => (box.hidden = true) }, 'Close'),
    ]),
    body,
  );
  box.scrollIntoView({ behavior: 'smooth', block: 'start' });
  show(body, 'loading', 'Loading the transaction…');
  let tx;
  try {
    ({ chainTransaction: tx } = await gql(
      `query ($sig: String!) { chainTransaction(signature: $sig) {
         signature slot blockTime fee status error
         movements { owner tokenAccount mint amount }
         reconciliation { status ledgerAmountUsdMicro chainAmountUsdMicro commitment detail checkedAt } } }`,
      { sig: signature },
    ));
  } catch (error) {
    return show(body, 'error', messageOf(error), () => void drillDown(signature, box));
  }
  if (!tx) return show(body, 'empty', 'The indexer has not seen this transaction.');
  const verdict = tx.reconciliation;
  show(body, 'ready', [
    el('p', {}, [
      el(
        'a',
        {
          href: explorerTemplate.replace('{signature}', encodeURIComponent(tx.signature)),
          target: '_blank',
          rel: 'noreferrer noopener',
          class: 'mono',
        },
        tx.signature,
      ),
    ]),
    el('dl', { class: 'stats' }, [
      el('div', {}, [el('dt', {}, 'On chain'), el('dd', {}, tx.status)]),
      el('div', {}, [el('dt', {}, 'Slot'), el('dd', {}, tx.slot)]),
      el('div', {}, [el('dt', {}, 'Block time'), el('dd', {}, dateTime(tx.blockTime))]),
      el('div', {}, [
        el('dt', {}, 'Verdict'),
        el('dd', { id: 'drill-verdict' }, verdict ? label(verdict.status) : '—'),
      ]),
    ]),
    verdict
      ? el('p', {}, [
          `Ledger ${usd(verdict.ledgerAmountUsdMicro)}, chain ${usd(verdict.chainAmountUsdMicro)}. `,
          el('span', { class: 'muted' }, verdict.detail),
        ])
      : null,
    tx.error ? el('p', { class: 'state error' }, tx.error) : null,
    tx.movements.length === 0
      ? el('p', { class: 'state empty' }, 'No token movements.')
      : el(
          'div',
          { class: 'table-wrap' },
          el('table', { id: 'movements-table' }, [
            el('caption', {}, 'Token movements (negative leaves the account)'),
            el(
              'thead',
              {},
              el('tr', {}, [
                el('th', { scope: 'col' }, 'Owner'),
                el('th', { scope: 'col', class: 'hide-narrow' }, 'Token account'),
                el('th', { scope: 'col', class: 'num' }, 'Amount'),
              ]),
            ),
            el(
              'tbody',
              {},
              tx.movements.map((m) =>
                el('tr', {}, [
                  el('td', { class: 'mono', title: m.owner }, short(m.owner)),
                  el('td', { class: 'mono hide-narrow', title: m.tokenAccount }, short(m.tokenAccount)),
                  el('td', { class: 'num' }, usd(m.amount)),
                ]),
              ),
            ),
          ]),
        ),
  ]);
}

async function exportCsv(form, status) {
  const day = form.elements.day.value || utcDay(new Date());
  show(status, 'loading', `Preparing the CSV of ${day}…`);
  try {
    const response = await rest('GET', `/finance/reconciliation?date=${encodeURIComponent(day)}`, {
      accept: 'text/csv',
    });
    const blob = await response.blob();
    const link = el(
      'a',
      { href: URL.createObjectURL(blob), download: `reconciliation-${day}.csv`, id: 'csv-link' },
      `reconciliation-${day}.csv`,
    );
    show(status, 'ready', el('p', { role: 'status' }, ['Ready: ', link]));
    link.click();
  } catch (error) {
    show(status, 'error', messageOf(error));
  }
}
