import { gql } from './lib/api.js';
import { usd } from './lib/format.js';
import { el, messageOf, show } from './lib/ui.js';

/*
 * The creator page's audience over the chosen range (GraphQL audience): distinct accounts that
 * engaged with the creator's posts, those whose engagement paid the creator, new followers, and
 * the top supporters by what they paid into the creator's earnings (the creator's USDC share).
 */

const QUERY = `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
  audience(handle: $handle, from: $from, to: $to) {
    uniqueEngagers payingEngagers newFollowers topSupporters { handle paidUsdMicro } } }`;

const count = new Intl.NumberFormat();

export function audiencePanel({ handle }) {
  const box = el('div', { id: 'audience', 'aria-live': 'polite' });
  let range = null;
  let asked = 0;

  async function load(next = range) {
    range = next;
    const mine = ++asked;
    show(box, 'loading', 'Loading your audience…');
    let audience;
    try {
      ({ audience } = await gql(QUERY, {
        handle,
        from: range.from.toISOString(),
        to: range.to.toISOString(),
      }));
    } catch (error) {
      if (mine === asked) show(box, 'error', messageOf(error), () => void load());
      return;
    }
    if (mine !== asked) return;
    const stat = (id, label, value) =>
      el('div', {}, [el('dt', {}, label), el('dd', { id, 'data-value': value }, count.format(value))]);
    const supporters = audience.topSupporters;
    show(box, 'ready', [
      el('dl', { class: 'stats', id: 'audience-cards' }, [
        stat('audience-unique', 'Unique engagers', audience.uniqueEngagers),
        stat('audience-paying', 'Paying engagers', audience.payingEngagers),
        stat('audience-followers', 'New followers', audience.newFollowers),
      ]),
      el('h3', {}, 'Top supporters'),
      supporters.length === 0
        ? el(
            'p',
            { class: 'state empty', id: 'top-supporters' },
            'No one paid to engage with your posts in this range.',
          )
        : el(
            'div',
            { class: 'table-wrap' },
            el('table', { id: 'top-supporters' }, [
              el(
                'caption',
                {},
                `Who paid the most into your earnings in the range (top ${supporters.length})`,
              ),
              el(
                'thead',
                {},
                el('tr', {}, [
                  el('th', { scope: 'col', class: 'num' }, '#'),
                  el('th', { scope: 'col' }, 'Supporter'),
                  el('th', { scope: 'col', class: 'num' }, 'Paid you'),
                ]),
              ),
              el(
                'tbody',
                {},
                supporters.map((s, i) =>
                  el('tr', { 'data-handle': s.handle }, [
                    el('td', { class: 'num' }, i + 1),
                    el('td', { class: 'handle' }, `@${s.handle}`),
                    el('td', { class: 'num paid' }, usd(s.paidUsdMicro)),
                  ]),
                ),
              ),
            ]),
          ),
    ]);
  }

  return { element: box, load };
}
