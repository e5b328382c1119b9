import { rest } from './lib/api.js';
import { dateTime } from './lib/format.js';
import { browserTimeZone, downloadRunFile, inZone, nextFollowRead, savedFileFacts } from './lib/reports.js';
import { el, messageOf, show } from './lib/ui.js';

/*
 * The finance page's Periods card (issue 50 item 4; docs/reports.md "Closing a period"): the
 * periods closed so far and their state (GET /finance/periods), a month and a time zone to close
 * (POST /finance/periods/{period}/close), what blocks a close (409 close_blocked: each status and
 * count, linked to the page's exception list filtered to that status), a close followed until the
 * period is closed (GET /finance/periods/{period}), its three frozen reports downloaded and checked
 * against their sha256, and Reopen for admins, after a confirmation.
 */

const REPORT_LABELS = {
  'balance.summary': 'Balance summary',
  'ledger.itemized': 'Ledger, itemized',
  'reconciliation.itemized': 'Reconciliation, itemized',
};
const STATUS_TONES = { open: '', closing: 'pending', closed: 'good' };

const monthOf = (date) => `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}`;
const statusLabel = (status) => status.replaceAll('_', ' ');

function periodBadge(status) {
  return el('span', { class: `badge ${STATUS_TONES[status] ?? ''}`.trim(), 'data-status': status }, status);
}

/**
 * `role`: the viewer's role as GraphQL names it (FINANCE, ADMIN); only ADMIN sees Reopen (the API
 * refuses it to finance anyway). `exceptionsLink(status, day)`: the href of the page's exception
 * list filtered to a status (and a ledger day, for a day period) and a click handler that shows it.
 */
export function periodsPanel({ role, exceptionsLink }) {
  const isAdmin = role === 'ADMIN';
  const now = new Date();
  const lastMonth = monthOf(new Date(now.getFullYear(), now.getMonth() - 1, 1));
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const monthInput = el('input', {
    type: 'month',
    id: 'period-month',
    name: 'month',
    value: lastMonth,
    max: monthOf(now),
    required: true,
    pattern: '\\d{4}-\\d{2}',
    placeholder: 'YYYY-MM',
  });
  const zoneInput = el('input', {
    name: 'timezone',
    id: 'period-timezone',
    value: browserTimeZone(),
    list: 'period-timezones',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
  });
  const submit = el('button', { type: 'submit', id: 'period-close' }, 'Close period');
  const form = el('form', { id: 'period-form', novalidate: true, 'aria-describedby': 'period-help' }, [
    el('div', { class: 'row' }, [
      el('label', {}, ['Month', monthInput]),
      el('label', { class: 'grow' }, [
        'Time zone',
        el('span', { class: 'hint' }, 'Where the month starts and ends'),
        zoneInput,
      ]),
      el(
        'datalist',
        { id: 'period-timezones' },
        zones.map((zone) => el('option', { value: zone })),
      ),
    ]),
    el(
      'p',
      { id: 'period-help', class: 'muted' },
      'Closing makes the month’s balance summary, itemized ledger and itemized reconciliation once and freezes them. A month closes once it has ended and nothing in it is open: payments not finalized, and pending, missing, amount mismatch, wrong party or unexplained verdicts.',
    ),
    el('div', { class: 'row' }, [submit]),
  ]);
  const detail = el('div', { id: 'period-detail', 'aria-live': 'polite' });
  const listBox = el('div', { id: 'periods-list', 'aria-live': 'polite' });
  const refresh = el(
    'button',
    { type: 'button', class: 'secondary', id: 'refresh-periods', onclick: () => void loadList() },
    'Refresh',
  );
  /** The period the detail box shows; another one takes the box and the older stops being followed. */
  let current = null;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const period = monthInput.value;
    const timezone = zoneInput.value.trim();
    if (!/^\d{4}-\d{2}$/.test(period) || !timezone) {
      return show(detail, 'error', 'Choose a month (YYYY-MM) and a time zone.');
    }
    current = period;
    submit.disabled = true;
    show(detail, 'loading', `Asking to close ${period}…`);
    let response;
    try {
      response = await rest('POST', `/finance/periods/${encodeURIComponent(period)}/close`, {
        body: { timezone },
      });
    } catch (error) {
      if (current === period) showRefusal(period, error);
      return;
    } finally {
      submit.disabled = false;
    }
    const answer = await response.json();
    void loadList();
    if (response.status === 200) return showPeriod(answer);
    await follow(period, { ...answer, reports: [] });
  });

  /** A refused close: the blockers with links to the exceptions, or the API's message. */
  function showRefusal(period, error) {
    detail.dataset.code = error.code ?? 'error';
    if (error.code !== 'close_blocked' || !Array.isArray(error.details.blockers)) {
      show(detail, 'error', messageOf(error));
      detail.dataset.code = error.code ?? 'error';
      return;
    }
    const day = /^\d{4}-\d{2}-\d{2}$/.test(period) ? period : null;
    show(detail, 'ready', [
      el('div', { class: 'result error', role: 'alert' }, [
        el('p', {}, [el('strong', {}, `${period} cannot close yet. `), error.message]),
        el(
          'div',
          { class: 'table-wrap' },
          el('table', { id: 'period-blockers' }, [
            el('caption', {}, `What is still open in ${period}`),
            el(
              'thead',
              {},
              el('tr', {}, [
                el('th', { scope: 'col' }, 'Status'),
                el('th', { scope: 'col', class: 'num' }, 'Count'),
                el('th', { scope: 'col' }, 'Exceptions'),
              ]),
            ),
            el(
              'tbody',
              {},
              error.details.blockers.map((b) => {
                const { href, onclick } = exceptionsLink(b.status, day);
                return el('tr', { 'data-status': b.status }, [
                  el('td', {}, el('span', { class: 'badge bad' }, statusLabel(b.status))),
                  el('td', { class: 'num' }, b.count),
                  el(
                    'td',
                    {},
                    el('a', { href, onclick, class: 'blocker-link' }, `Show ${statusLabel(b.status)}`),
                  ),
                ]);
              }),
            ),
          ]),
        ),
        el(
          'p',
          { class: 'muted' },
          day
            ? 'Each link shows the exception list for that status and day.'
            : 'Each link shows the exception list for that status, every ledger day (the list filters by one day, not by month: the month’s are among them).',
        ),
      ]),
    ]);
    detail.dataset.code = 'close_blocked';
  }

  /** Reads a closing period until it is closed (or reopened), showing its state each time. */
  async function follow(period, first) {
    const started = Date.now();
    let last = first;
    showPeriod(last);
    while (last.status === 'closing' && current === period) {
      if (!(await nextFollowRead(started))) {
        detail.append(el('p', { class: 'muted' }, 'Still closing: Refresh the list later.'));
        return;
      }
      if (current !== period) return;
      try {
        last = await (await rest('GET', `/finance/periods/${encodeURIComponent(period)}`)).json();
        if (current === period) showPeriod(last);
      } catch (error) {
        if (current === period) {
          showPeriod(last, error);
        }
      }
    }
    void loadList();
  }

  /** A period: its state, and once closed its frozen reports, each downloadable and checked. */
  function showPeriod(period, problem) {
    delete detail.dataset.code;
    detail.dataset.state = 'ready';
    detail.dataset.period = period.period;
    detail.dataset.status = period.status;
    detail.setAttribute('aria-busy', 'false');
    const body = [
      el('p', {}, [
        periodBadge(period.status),
        ' ',
        el('strong', {}, period.period),
        period.timezone ? ` (${period.timezone})` : '',
        period.closed_at && period.status === 'closed'
          ? `, closed ${inZone(period.closed_at, period.timezone ?? 'UTC')}`
          : '',
      ]),
    ];
    if (period.status === 'closing') {
      body.push(
        el('p', { class: 'muted' }, [
          el('span', { class: 'spinner', 'aria-hidden': 'true' }),
          'Making its three reports (balance summary, itemized ledger, itemized reconciliation)…',
        ]),
      );
    }
    if (period.status === 'open' && period.reopened_at) {
      body.push(
        el('p', { class: 'muted' }, `Reopened ${dateTime(period.reopened_at)}; it can be closed again.`),
      );
    }
    if (period.status === 'closed') body.push(reportsTable(period));
    if (problem) {
      body.push(
        el('p', { class: 'muted' }, `Could not read its state (${messageOf(problem)}); trying again.`),
      );
    }
    const fileBox = el('div', { id: 'period-file', 'aria-live': 'polite' });
    body.push(fileBox);
    if (isAdmin && period.status !== 'open') body.push(reopenControls(period));
    detail.replaceChildren(
      el('div', { class: `result ${period.status === 'closed' ? 'success' : ''}`.trim() }, body),
    );

    function reportsTable(p) {
      return el(
        'div',
        { class: 'table-wrap' },
        el('table', { id: 'period-reports' }, [
          el('caption', {}, `The frozen reports of ${p.period}`),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col' }, 'Report'),
              el('th', { scope: 'col', class: 'num' }, 'Rows'),
              el('th', { scope: 'col' }, 'sha256'),
              el('th', { scope: 'col' }, 'File'),
            ]),
          ),
          el(
            'tbody',
            {},
            p.reports.map((r) =>
              el('tr', { 'data-type': r.type, 'data-report-id': r.id }, [
                el('td', {}, REPORT_LABELS[r.type] ?? r.type),
                el(
                  'td',
                  { class: 'num rows' },
                  r.row_count === null ? '—' : Number(r.row_count).toLocaleString(),
                ),
                el('td', { class: 'mono sha256' }, r.sha256 ?? '—'),
                el(
                  'td',
                  {},
                  el(
                    'button',
                    {
                      type: 'button',
                      class: 'secondary download',
                      'aria-label': `Download the ${r.type} of ${p.period}`,
                      onclick: (event) => void downloadReport(r, event.currentTarget, fileBox),
                    },
                    'Download',
                  ),
                ),
              ]),
            ),
          ),
        ]),
      );
    }
  }

  /** Reopen (admin), asked twice: the frozen reports stop being answered for their parameters. */
  function reopenControls(period) {
    const box = el('div', { class: 'row', id: 'period-reopen-box' });
    const ask = () =>
      box.replaceChildren(
        el(
          'button',
          { type: 'button', class: 'danger', id: 'period-reopen', onclick: askToConfirm },
          'Reopen',
        ),
      );
    function askToConfirm() {
      box.replaceChildren(
        el('p', { role: 'alert', id: 'period-reopen-question' }, [
          `Reopen ${period.period}? Its reports stop being frozen: the same parameters start new runs, and closing it again makes new files. Every finance and admin account is told (period.reopened).`,
        ]),
        el(
          'button',
          { type: 'button', class: 'danger', id: 'period-reopen-confirm', onclick: () => void reopen() },
          `Yes, reopen ${period.period}`,
        ),
        el(
          'button',
          { type: 'button', class: 'secondary', id: 'period-reopen-cancel', onclick: ask },
          'Cancel',
        ),
      );
      box.querySelector('#period-reopen-confirm').focus();
    }
    async function reopen() {
      for (const button of box.querySelectorAll('button')) button.disabled = true;
      try {
        const answer = await (
          await rest('POST', `/finance/periods/${encodeURIComponent(period.period)}/reopen`)
        ).json();
        current = answer.period;
        showPeriod(answer);
      } catch (error) {
        box.replaceChildren(el('p', { class: 'field-error', role: 'alert' }, messageOf(error)));
        box.append(el('button', { type: 'button', class: 'secondary', onclick: ask }, 'Back'));
      }
      void loadList();
    }
    ask();
    return box;
  }

  /**
   * A frozen report's file: its run (GET /reports/{id}, readable by any finance account) must carry
   * the period's sha256; the browser then saves the file through a signed link as it arrives (a
   * closed month's itemized ledger is gigabytes: the page never holds it), and the page shows the
   * sha256 the saved file must have.
   */
  async function downloadReport(report, button, box) {
    button.disabled = true;
    show(box, 'loading', 'Downloading…');
    try {
      const run = await (await rest('GET', `/reports/${encodeURIComponent(report.id)}`)).json();
      if (run.sha256 !== report.sha256) {
        throw new Error(`The run's sha256 (${run.sha256}) is not the period's (${report.sha256}).`);
      }
      await downloadRunFile(run);
      show(box, 'ready', savedFileFacts(run, 'period-file'));
    } catch (error) {
      show(box, 'error', messageOf(error));
    } finally {
      button.disabled = false;
    }
  }

  async function loadList() {
    show(listBox, 'loading', 'Loading the periods…');
    let periods;
    try {
      ({ periods } = await (await rest('GET', '/finance/periods')).json());
    } catch (error) {
      return show(listBox, 'error', messageOf(error), () => void loadList());
    }
    if (periods.length === 0) return show(listBox, 'empty', 'No period has been closed yet.');
    show(
      listBox,
      'ready',
      el(
        'div',
        { class: 'table-wrap' },
        el('table', { id: 'periods-table' }, [
          el('caption', {}, 'Periods closed, closing or reopened, newest first'),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col' }, 'Period'),
              el('th', { scope: 'col' }, 'Status'),
              el('th', { scope: 'col', class: 'hide-narrow' }, 'Time zone'),
              el('th', { scope: 'col', class: 'hide-narrow' }, 'Closed'),
              el('th', { scope: 'col' }, ''),
            ]),
          ),
          el(
            'tbody',
            {},
            periods.map((p) =>
              el('tr', { 'data-period': p.period, 'data-status': p.status }, [
                el('td', {}, p.period),
                el('td', {}, [
                  periodBadge(p.status),
                  p.status === 'open' && p.reopened_at ? el('span', { class: 'muted' }, ' (reopened)') : null,
                ]),
                el('td', { class: 'hide-narrow' }, p.timezone),
                el('td', { class: 'hide-narrow' }, p.closed_at ? dateTime(p.closed_at) : '—'),
                el(
                  'td',
                  {},
                  el(
                    'button',
                    {
                      type: 'button',
                      class: 'secondary show-period',
                      'aria-label': `Show ${p.period}`,
                      onclick: () => {
                        current = p.period;
                        void follow(p.period, p);
                      },
                    },
                    'Show',
                  ),
                ),
              ]),
            ),
          ),
        ]),
      ),
    );
  }

  void loadList();
  return el('section', { class: 'card', 'aria-labelledby': 'periods-title', id: 'periods' }, [
    el('div', { class: 'section-head' }, [el('h2', { id: 'periods-title' }, 'Periods'), refresh]),
    form,
    detail,
    el('h3', { id: 'periods-list-title' }, 'Closed and reopened periods'),
    listBox,
  ]);
}
