import {
  browserTimeZone,
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
 * The creator page's Statements (issue 50 item 4): a month of the caller's own money as a file,
 * in CSV or in the CSVs Koinly and CoinTracker import. One button asks for an `account.statement`
 * run of the caller's account over that month in the browser's time zone (needs only `read`),
 * waits for it and has the browser save the file through a short-lived signed link (streamed to
 * disk, never held by the page), showing the run's sha256 to check the saved file against. The
 * current month runs up to now.
 */

const FORMATS = [
  ['csv', 'CSV'],
  ['koinly', 'Koinly'],
  ['cointracker', 'CoinTracker'],
];

const monthOf = (date) => `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}`;

/** The first day of the month after `month` (YYYY-MM) as YYYY-MM-DD. */
function nextMonthStart(month) {
  const [y, m] = month.split('-').map(Number);
  return m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
}

export function statementsPanel() {
  const thisMonth = monthOf(new Date());
  const monthInput = el('input', {
    type: 'month',
    id: 'statement-month',
    name: 'month',
    value: thisMonth,
    max: thisMonth,
    required: true,
    pattern: '\\d{4}-\\d{2}',
    placeholder: 'YYYY-MM',
  });
  const buttons = FORMATS.map(([format, label]) =>
    el(
      'button',
      { type: 'button', id: `statement-${format}`, 'data-format': format, onclick: () => void make(format) },
      label,
    ),
  );
  const progress = el('div', { id: 'statement-progress', 'aria-live': 'polite' });
  const requester = reportRequester();
  let current = null;
  monthInput.addEventListener('input', () => requester.forget());

  async function make(format) {
    const month = monthInput.value;
    if (!/^\d{4}-\d{2}$/.test(month)) {
      monthInput.setAttribute('aria-invalid', 'true');
      return show(progress, 'error', 'Choose a month (YYYY-MM).');
    }
    monthInput.removeAttribute('aria-invalid');
    const timezone = browserTimeZone();
    for (const button of buttons) button.disabled = true;
    show(progress, 'loading', `Asking for your ${month} statement…`);
    try {
      const asked = await requester.ask(`${month} ${format} ${timezone}`, () => ({
        type: 'account.statement',
        interval_start: `${month}-01`,
        interval_end: intervalEndFor(nextMonthStart(month), timezone),
        timezone,
        format,
      }));
      current = asked.id;
      const wait = (run) =>
        show(progress, 'loading', [statusBadge(run.status), ` Making your ${month} statement…`]);
      wait(asked);
      const run = await followRun(asked, {
        onUpdate: (next) => {
          if (current === asked.id) wait(next);
        },
        stillWanted: () => current === asked.id,
      });
      if (current !== asked.id) return;
      if (run.status === 'failed') {
        return show(progress, 'error', `The statement failed: ${run.error ?? 'no reason given'}`);
      }
      if (run.status !== 'succeeded') {
        return show(progress, 'error', `The statement is still ${run.status}; try again in a few minutes.`);
      }
      show(progress, 'loading', 'Starting the download…');
      await downloadRunFile(run);
      show(progress, 'ready', [
        el('div', { class: 'result success' }, [
          savedFileFacts(run, 'statement'),
          el('p', { class: 'muted' }, `Covers ${intervalText(run)}.`),
          ...runFacts(run, 'statement'),
        ]),
      ]);
      progress.dataset.reportId = run.id;
    } catch (error) {
      show(progress, 'error', messageOf(error));
    } finally {
      for (const button of buttons) button.disabled = false;
    }
  }

  return el('section', { class: 'card', 'aria-labelledby': 'statements-title', id: 'statements' }, [
    el('h2', { id: 'statements-title' }, 'Statements'),
    el(
      'p',
      { class: 'muted' },
      'Every movement of your money in a month, oldest first, with the balance after each: as CSV, or as the files Koinly and CoinTracker import. The month is read in your browser’s time zone.',
    ),
    el('div', { class: 'row' }, [el('label', {}, ['Month', monthInput]), ...buttons]),
    progress,
  ]);
}
