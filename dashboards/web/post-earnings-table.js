import { gql } from './lib/api.js';
import { dateTime, usd } from './lib/format.js';
import { el, messageOf, show } from './lib/ui.js';

/*
 * Every post of the creator with what it earned and its engagement in the chosen range
 * (postEarnings: all the creator's posts, not a window of the latest ones), sortable by earned,
 * engagement or newest, a page at a time. The API pages forward only (signed cursors scoped to the
 * creator, the order and the range), so Previous re-asks the page before with the cursor that
 * opened it: the table keeps the `after` of each page it went through. A new order or range starts
 * again at page 1.
 */

export const POSTS_PAGE = 10;

const ORDERS = [
  ['EARNED', 'Earned'],
  ['ENGAGEMENT', 'Engagement'],
  ['NEWEST', 'Newest'],
];

const QUERY = `query ($handle: String!, $from: DateTime!, $to: DateTime!, $order: PostEarningsOrder!, $first: Int!, $after: String) {
  postEarnings(handle: $handle, from: $from, to: $to, orderBy: $order, first: $first, after: $after) {
    edges { cursor node { postId createdAt earnedUsdMicro likes replies quotes reposts post { type content } } }
    pageInfo { hasNextPage endCursor } } }`;

const EXCERPT = 80;

export function postEarningsTable({ handle }) {
  let range = null;
  let order = 'EARNED';
  /** The `after` of each page shown so far, the current page's last (page 1: null). */
  let cursors = [null];
  let nextCursor = null;
  let asked = 0;

  const box = el('div', { id: 'posts', 'aria-live': 'polite' });
  const status = el('span', { id: 'posts-page', class: 'muted' });
  const previous = el(
    'button',
    { type: 'button', class: 'secondary', id: 'posts-previous', disabled: true, onclick: () => go(-1) },
    'Previous',
  );
  const next = el(
    'button',
    { type: 'button', class: 'secondary', id: 'posts-next', disabled: true, onclick: () => go(1) },
    'Next',
  );
  const sort = el(
    'div',
    { class: 'segmented', id: 'posts-sort', role: 'group', 'aria-label': 'Sort posts by' },
    ORDERS.map(([value, label]) =>
      el(
        'button',
        {
          type: 'button',
          'data-order': value,
          'aria-pressed': String(value === order),
          onclick: () => {
            order = value;
            for (const b of sort.querySelectorAll('button'))
              b.setAttribute('aria-pressed', String(b.dataset.order === order));
            cursors = [null];
            void load();
          },
        },
        label,
      ),
    ),
  );

  function go(step) {
    if (step > 0 && nextCursor) cursors.push(nextCursor);
    else if (step < 0 && cursors.length > 1) cursors.pop();
    else return;
    void load();
  }

  function setRange(next) {
    range = next;
    cursors = [null];
    return load();
  }

  async function load() {
    const mine = ++asked;
    const after = cursors.at(-1);
    previous.disabled = true;
    next.disabled = true;
    show(box, 'loading', 'Loading your posts…');
    box.dataset.order = order;
    box.dataset.page = String(cursors.length);
    let page;
    try {
      ({ postEarnings: page } = await gql(QUERY, {
        handle,
        from: range.from.toISOString(),
        to: range.to.toISOString(),
        order,
        first: POSTS_PAGE,
        after,
      }));
    } catch (error) {
      if (mine !== asked) return;
      previous.disabled = cursors.length === 1;
      return show(box, 'error', messageOf(error), () => void load());
    }
    if (mine !== asked) return; // an answer for an order, page or range no longer asked for
    nextCursor = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    previous.disabled = cursors.length === 1;
    next.disabled = !nextCursor;
    const first = (cursors.length - 1) * POSTS_PAGE + 1;
    status.textContent =
      page.edges.length === 0
        ? ''
        : `Posts ${first}–${first + page.edges.length - 1}, page ${cursors.length}`;
    if (page.edges.length === 0 && cursors.length === 1) {
      return show(box, 'empty', 'No posts yet. Every post you make is listed here with what it earned.');
    }
    show(box, 'ready', table(page.edges));
  }

  function table(edges) {
    return el(
      'div',
      { class: 'table-wrap' },
      el('table', { id: 'posts-table' }, [
        el('caption', {}, 'Every post you made, with its earnings and engagement in the range'),
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
          edges.map(({ cursor, node: p }) =>
            el('tr', { 'data-post-id': p.postId, 'data-cursor': cursor }, [
              el('td', {}, [
                el('div', { class: 'excerpt', title: `Post ${p.postId}` }, excerpt(p)),
                el(
                  'div',
                  { class: 'muted small' },
                  `${p.post ? `${p.post.type.toLowerCase()} · ` : ''}${dateTime(p.createdAt)}`,
                ),
              ]),
              el('td', { class: 'num earned' }, usd(p.earnedUsdMicro)),
              el('td', { class: 'num likes' }, p.likes),
              el('td', { class: 'num replies' }, p.replies),
              el('td', { class: 'num quotes hide-narrow' }, p.quotes),
              el('td', { class: 'num reposts hide-narrow' }, p.reposts),
            ]),
          ),
        ),
      ]),
    );
  }

  const element = el('div', {}, [
    el('div', { class: 'row' }, [sort]),
    box,
    el('div', { class: 'row pager' }, [previous, next, status]),
  ]);
  return { element, setRange, reload: load };
}

/** The post's text, cut to a line; a post whose payment failed on chain is not shown by the read path. */
function excerpt(p) {
  if (!p.post) return el('span', { class: 'muted' }, 'Post not shown (its payment failed)');
  const text = p.post.content;
  return text.length > EXCERPT ? `${text.slice(0, EXCERPT)}…` : text;
}
