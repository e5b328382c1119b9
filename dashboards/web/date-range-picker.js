import { choiceToQuery, isTimeZone, localDay, PRESETS, rangeText, resolveRange } from './lib/date-range.js';
import { el } from './lib/ui.js';

/*
 * The creator page's range picker: 24 h, 7 d, 30 d, 90 d, 12 months or custom days (first and
 * last, both included), read in a time zone (an IANA name, default the browser's). The bucket
 * follows the range (lib/date-range.js). The choice is written into the page's address
 * (history.replaceState) so a reload or a shared link keeps it. A choice the page cannot read (an
 * unknown zone, a last day before the first) is flagged on its field and never sent.
 *
 * `onChange(range)` is called with each new resolved range; #range-summary carries it as
 * data-from / data-to (ISO instants), data-granularity and data-timezone.
 */
export function rangePicker({ initial, onChange }) {
  let choice = { ...initial };
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const today = localDay(new Date(), isTimeZone(choice.timezone) ? choice.timezone : 'UTC');
  const fromInput = el('input', { type: 'date', id: 'range-from', name: 'from', required: true });
  const toInput = el('input', { type: 'date', id: 'range-to', name: 'to', required: true });
  const zoneInput = el('input', {
    type: 'text',
    id: 'range-timezone',
    name: 'timezone',
    list: 'range-timezones',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
  });
  const error = el('p', { id: 'range-error', class: 'field-error', role: 'alert', hidden: true });
  const summary = el('p', { id: 'range-summary', class: 'muted', 'aria-live': 'polite' });
  const custom = el('form', { id: 'range-custom', class: 'row wrap', hidden: true }, [
    el('label', {}, ['First day ', fromInput]),
    el('label', {}, ['Last day ', toInput]),
    el('button', { type: 'submit', id: 'range-apply' }, 'Apply'),
  ]);
  const presets = el(
    'div',
    { class: 'segmented', role: 'group', 'aria-label': 'Range' },
    PRESETS.map((p) =>
      el(
        'button',
        { type: 'button', 'data-range': p.id, 'aria-label': p.long, onclick: () => pick(p.id) },
        p.label,
      ),
    ),
  );

  function pick(preset) {
    if (preset === 'custom') {
      // Open the two days on the last range shown, for the person to edit.
      choice = { ...choice, preset, from: choice.from || fromInput.value, to: choice.to || toInput.value };
      mark();
      custom.hidden = false;
      fromInput.focus();
      if (choice.from && choice.to) apply();
      return;
    }
    choice = { preset, timezone: choice.timezone };
    apply();
  }

  function mark() {
    for (const b of presets.querySelectorAll('button'))
      b.setAttribute('aria-pressed', String(b.dataset.range === choice.preset));
    custom.hidden = choice.preset !== 'custom';
  }

  function flag(field, message) {
    for (const input of [fromInput, toInput, zoneInput]) input.removeAttribute('aria-invalid');
    const input = { from: fromInput, to: toInput, timezone: zoneInput }[field];
    if (input) input.setAttribute('aria-invalid', 'true');
    error.textContent = message ?? '';
    error.hidden = !message;
  }

  function apply() {
    mark();
    let range;
    try {
      range = resolveRange(choice);
    } catch (e) {
      flag(e.field, e.message);
      summary.dataset.state = 'invalid';
      return;
    }
    flag(null);
    // Fill the custom fields with what is shown, so "Custom" starts from it.
    fromInput.value = range.firstDay;
    toInput.value = localDay(new Date(range.to.getTime() - 1), range.timezone);
    history.replaceState(null, '', `${location.pathname}${choiceToQuery(choice)}${location.hash}`);
    summary.textContent = rangeText(range);
    Object.assign(summary.dataset, {
      state: 'ready',
      from: range.from.toISOString(),
      to: range.to.toISOString(),
      granularity: range.granularity,
      timezone: range.timezone,
    });
    onChange(range);
  }

  custom.addEventListener('submit', (event) => {
    event.preventDefault();
    choice = { ...choice, preset: 'custom', from: fromInput.value, to: toInput.value };
    apply();
  });
  zoneInput.addEventListener('change', () => {
    choice = { ...choice, timezone: zoneInput.value.trim() };
    apply();
  });
  zoneInput.value = choice.timezone;
  fromInput.value = choice.from ?? '';
  toInput.value = choice.to ?? today;

  const element = el('div', { class: 'range-picker', id: 'range' }, [
    el('div', { class: 'row wrap' }, [
      presets,
      el('label', {}, ['Time zone ', zoneInput]),
      el(
        'datalist',
        { id: 'range-timezones' },
        zones.map((zone) => el('option', { value: zone })),
      ),
    ]),
    custom,
    error,
    summary,
  ]);
  return { element, start: apply };
}
