import { rest } from './lib/api.js';
import { dateTime } from './lib/format.js';
import {
  browserTimeZone,
  byteSize,
  downloadRunFile,
  followRun,
  intervalEndFor,
  intervalText,
  reportRequester,
  runFacts,
  savedFileFacts,
  statusBadge,
} from './lib/reports.js';
import { el, messageOf, show } from './lib/ui.js';

/*
 * The finance page's Reports panel (issue 50 item 4; docs/reports.md): ask for a report run (type,
 * interval as local start and end days, IANA timezone, format), follow it to succeeded or failed,
 * download its file (through a short-lived signed link the browser saves as it streams; the run's
 * sha256 shown to check the saved file against) and list the account's recent runs, each
 * downloadable once succeeded.
 */

const TYPES = {
  'reconciliation.itemized': 'Reconciliation, itemized (every verdict)',
  'balance.summary': 'Balance summary (opening, movements, closing)',
  'ledger.itemized': 'Ledger, itemized (every leg)',
  'account.statement': 'Account statement',
};
const FORMATS = {
  csv: 'CSV',
  jsonl: 'JSON Lines',
  parquet: 'Parquet',
  koinly: 'Koinly CSV',
  cointracker: 'CoinTracker CSV',
};
/** The accounting tools' CSVs exist for statements only. */
const STATEMENT_ONLY_FORMATS = new Set(['koinly', 'cointracker']);
const RUNS_PAGE = 10;

/** YYYY-MM-DD of a local calendar date. */
const localDay = (date) =>
  `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;

export function reportsPanel() {
  const now = new Date();
  // Default: last month, the period finance closes.
  const start = localDay(new Date(now.getFullYear(), now.getMonth() - 1, 1));
  const end = localDay(new Date(now.getFullYear(), now.getMonth(), 1));
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];

  const typeSelect = el(
    'select',
    { name: 'type', id: 'report-type' },
    Object.entries(TYPES).map(([value, label]) => el('option', { value }, label)),
  );
  const formatSelect = el(
    'select',
    { name: 'format', id: 'report-format' },
    Object.entries(FORMATS).map(([value, label]) => el('option', { value }, label)),
  );
  const accountLabel = el('label', { class: 'narrow', hidden: true }, [
    'Account',
    el('span', { class: 'hint' }, 'Handle; empty: your own'),
    el('input', { name: 'account', id: 'report-account', autocomplete: 'off', spellcheck: 'false' }),
  ]);
  const submit = el('button', { type: 'submit', id: 'report-run' }, 'Run report');
  const form = el('form', { id: 'report-form', novalidate: true, 'aria-describedby': 'report-help' }, [
    el('div', { class: 'row' }, [
      el('label', { class: 'grow' }, ['Type', typeSelect]),
      el('label', { class: 'narrow' }, ['Format', formatSelect]),
      accountLabel,
    ]),
    el('div', { class: 'row' }, [
      el('label', {}, [
        'Start',
        el('span', { class: 'hint' }, 'From 00:00, included'),
        el('input', { type: 'date', name: 'start', id: 'report-start', value: start, required: true }),
      ]),
      el('label', {}, [
        'End',
        el('span', { class: 'hint' }, 'Until 00:00, excluded'),
        el('input', { type: 'date', name: 'end', id: 'report-end', value: end, required: true }),
      ]),
      el('label', { class: 'grow' }, [
        'Time zone',
        el('span', { class: 'hint' }, 'IANA name, e.g. Europe/Paris'),
        el('input', {
          name: 'timezone',
          id: 'report-timezone',
          value: browserTimeZone(),
          list: 'report-timezones',
          autocomplete: 'off',
          spellcheck: 'false',
          required: true,
        }),
      ]),
      el(
        'datalist',
        { id: 'report-timezones' },
        zones.map((zone) => el('option', { value: zone })),
      ),
    ]),
    el('p', { id: 'report-help', class: 'muted' }, [
      'Days are read in the time zone, which the file’s times are printed in too. ',
      'An end after now runs up to now. At most 366 days.',
    ]),
    el('div', { class: 'row' }, [submit]),
  ]);
  const progress = el('div', { id: 'report-progress', 'aria-live': 'polite' });
  const runsBox = el('div', { id: 'report-runs', 'aria-live': 'polite' });
  const runsStatus = el('div', { id: 'report-runs-status', 'aria-live': 'polite' });
  const refresh = el(
    'button',
    { type: 'button', class: 'secondary', id: 'refresh-reports', onclick: () => void loadRuns() },
    'Refresh',
  );

  const requester = reportRequester();
  /** The run the progress box shows; a newer run takes the box and the older one stops being followed. */
  let current = null;

  function syncFormats() {
    const statement = typeSelect.value === 'account.statement';
    accountLabel.hidden = !statement;
    for (const option of formatSelect.options)
      option.disabled = !statement && STATEMENT_ONLY_FORMATS.has(option.value);
    if (formatSelect.selectedOptions[0]?.disabled) formatSelect.value = 'csv';
  }
  typeSelect.addEventListener('change', syncFormats);
  // Any edit is another run: the next Run press gets a new Idempotency-Key.
  form.addEventListener('input', () => requester.forget());
  form.addEventListener('change', () => requester.forget());
  syncFormats();

  /** What is chosen, as the API takes it (the end made at the first press of Run, then kept). */
  function chosen() {
    const f = form.elements;
    return {
      type: f.type.value,
      start: f.start.value,
      end: f.end.value,
      timezone: f.timezone.value.trim(),
      format: f.format.value,
      account: f.type.value === 'account.statement' ? f.account.value.trim() : '',
    };
  }
  function bodyOf(choice) {
    return {
      type: choice.type,
      interval_start: choice.start,
      interval_end: intervalEndFor(choice.end, choice.timezone),
      timezone: choice.timezone,
      format: choice.format,
      ...(choice.account ? { account: choice.account } : {}),
    };
  }

  function showProgress(run, problem) {
    progress.dataset.state = 'ready';
    progress.dataset.status = run.status;
    progress.dataset.reportId = run.id;
    progress.setAttribute('aria-busy', 'false');
    const head = el('p', {}, [
      statusBadge(run.status),
      ' ',
      el('strong', {}, TYPES[run.type] ?? run.type),
      `, ${FORMATS[run.format] ?? run.format}: ${intervalText(run)}`,
    ]);
    const body = [];
    if (run.status === 'pending') body.push(el('p', { class: 'muted' }, 'Queued for the worker…'));
    if (run.status === 'running') body.push(el('p', { class: 'muted' }, 'Writing the file…'));
    if (run.status === 'failed') {
      body.push(el('p', { class: 'field-error', role: 'alert' }, run.error ?? 'The run failed.'));
    }
    if (run.status === 'succeeded') {
      body.push(
        ...runFacts(run, 'report'),
        el('div', { class: 'row' }, [
          el(
            'button',
            {
              type: 'button',
              id: 'report-download',
              onclick: (event) => void downloadInto(run, event.currentTarget, fileBox, 'report-file'),
            },
            'Download',
          ),
        ]),
      );
    }
    if (problem)
      body.push(
        el('p', { class: 'muted' }, `Could not read its status (${messageOf(problem)}); trying again.`),
      );
    const fileBox = el('div', { id: 'report-file', 'aria-live': 'polite' });
    progress.replaceChildren(
      el(
        'div',
        {
          class:
            `result ${run.status === 'failed' ? 'error' : run.status === 'succeeded' ? 'success' : ''}`.trim(),
        },
        [head, ...body, fileBox],
      ),
    );
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const choice = chosen();
    if (!choice.start || !choice.end || !choice.timezone) {
      return show(progress, 'error', 'Choose a start day, an end day and a time zone.');
    }
    submit.disabled = true;
    show(progress, 'loading', 'Asking for the report…');
    let run;
    try {
      run = await requester.ask(JSON.stringify(choice), () => bodyOf(choice));
    } catch (error) {
      show(progress, 'error', messageOf(error));
      progress.dataset.code = error.code ?? 'error';
      return;
    } finally {
      submit.disabled = false;
    }
    delete progress.dataset.code;
    current = run.id;
    showProgress(run);
    void loadRuns();
    try {
      const last = await followRun(run, {
        onUpdate: (next, problem) => {
          if (current === run.id) showProgress(next, problem);
        },
        stillWanted: () => current === run.id,
      });
      if (current === run.id && last.status !== 'succeeded' && last.status !== 'failed') {
        progress.append(
          el('p', { class: 'muted' }, 'Still not done: see the list of runs below and Refresh later.'),
        );
      }
    } catch (error) {
      if (current === run.id) show(progress, 'error', messageOf(error));
    }
    void loadRuns();
  });

  /**
   * Hands a run's file to the browser's download manager through a signed link (the page never
   * holds it) and shows the sha256 the saved file must have. Download again asks for a new link.
   */
  async function downloadInto(run, button, box, idPrefix) {
    button.disabled = true;
    show(box, 'loading', 'Starting the download…');
    try {
      await downloadRunFile(run);
      show(box, 'ready', savedFileFacts(run, idPrefix));
    } catch (error) {
      show(box, 'error', messageOf(error));
    } finally {
      button.disabled = false;
    }
  }

  async function loadRuns(cursor, rowsSoFar = []) {
    if (!cursor) show(runsBox, 'loading', 'Loading your runs…');
    let page;
    try {
      const query = `?limit=${RUNS_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      page = await (await rest('GET', `/reports${query}`)).json();
    } catch (error) {
      return show(runsBox, 'error', messageOf(error), () => void loadRuns());
    }
    const runs = rowsSoFar.concat(page.reports);
    if (runs.length === 0) return show(runsBox, 'empty', 'No report runs yet.');
    show(runsBox, 'ready', [
      el(
        'div',
        { class: 'table-wrap' },
        el('table', { id: 'report-runs-table' }, [
          el('caption', {}, 'Your report runs, newest first'),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col' }, 'Asked'),
              el('th', { scope: 'col' }, 'Type'),
              el('th', { scope: 'col', class: 'hide-narrow' }, 'Interval'),
              el('th', { scope: 'col' }, 'Format'),
              el('th', { scope: 'col' }, 'Status'),
              el('th', { scope: 'col', class: 'num hide-narrow' }, 'Rows'),
              el('th', { scope: 'col', class: 'num hide-narrow' }, 'Size'),
              el('th', { scope: 'col' }, 'File'),
            ]),
          ),
          el(
            'tbody',
            {},
            runs.map((run) =>
              el('tr', { 'data-report-id': run.id, 'data-status': run.status }, [
                el('td', {}, dateTime(run.created_at)),
                el('td', {}, [
                  run.type,
                  run.account ? el('span', { class: 'muted' }, ` (${run.account})`) : null,
                ]),
                el('td', { class: 'hide-narrow' }, intervalText(run)),
                el('td', {}, run.format),
                el('td', { title: run.error ?? '' }, statusBadge(run.status)),
                el(
                  'td',
                  { class: 'num hide-narrow' },
                  run.row_count === null ? '—' : Number(run.row_count).toLocaleString(),
                ),
                el('td', { class: 'num hide-narrow' }, run.bytes === null ? '—' : byteSize(run.bytes)),
                el(
                  'td',
                  {},
                  run.status === 'succeeded'
                    ? el(
                        'button',
                        {
                          type: 'button',
                          class: 'secondary download',
                          'aria-label': `Download the ${run.type} run of ${dateTime(run.created_at)}`,
                          onclick: (event) =>
                            void downloadInto(run, event.currentTarget, runsStatus, 'report-runs-file'),
                        },
                        'Download',
                      )
                    : run.status === 'failed'
                      ? el('span', { class: 'muted' }, run.error ?? 'failed')
                      : '—',
                ),
              ]),
            ),
          ),
        ]),
      ),
      page.has_more
        ? el(
            'button',
            { type: 'button', class: 'secondary', onclick: () => void loadRuns(page.next_cursor, runs) },
            'Load more',
          )
        : null,
    ]);
  }

  void loadRuns();
  return el('section', { class: 'card', 'aria-labelledby': 'reports-title', id: 'reports' }, [
    el('div', { class: 'section-head' }, [el('h2', { id: 'reports-title' }, 'Reports'), refresh]),
    form,
    progress,
    el('h3', { id: 'report-runs-title' }, 'Recent runs'),
    runsStatus,
    runsBox,
  ]);
}
