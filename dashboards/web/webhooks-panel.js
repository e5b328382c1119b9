import { rest } from './lib/api.js';
import { dateTime, short, usdDecimal } from './lib/format.js';
import { copyButton, el, messageOf, show } from './lib/ui.js';

/*
 * The developer portal's webhooks panel, as Stripe's dashboard has it: the account's endpoints
 * with their state (enabled, or disabled with the reason; failing since, next attempt), the
 * delivery log of the endpoint opened, and add / rotate secret / enable / replay / delete. A
 * signing secret is on the page only in the answer that made it (add, rotate), as API keys are.
 * Beside it, the account's most recent events (GET /api/v1/events), whose `sequence` is the
 * cursor a replay starts after. REST only (/api/v1/webhooks, /api/v1/events); every value from
 * the API goes in as text (el()), never as HTML.
 */

/** The event types an endpoint can subscribe to: EVENT_TYPES of src/domain/events/event-types.ts (the browser test holds them equal). */
const EVENT_TYPES = [
  'payment.confirmed',
  'payment.finalized',
  'payment.failed',
  'post.replied',
  'post.quoted',
  'post.reposted',
  'post.liked',
  'follow.created',
  'send.received',
  'reconciliation.exception',
  'report.succeeded',
  'report.failed',
  'period.closed',
  'period.reopened',
];

const TYPE_HINTS = {
  'reconciliation.exception': 'finance accounts only',
  'report.succeeded': 'the account that asked for the report',
  'report.failed': 'the account that asked for the report',
  'period.closed': 'finance and admin accounts only',
  'period.reopened': 'finance and admin accounts only',
};

/** The API's own limit (MAX_WEBHOOK_ENDPOINTS): the add button says so before the 409 would. */
const MAX_ENDPOINTS = 5;

/** While an endpoint is open its state and newest attempts are re-read this often (ms). */
const POLL_MS = 3_000;
const LOG_PAGE = 20;
const RECENT_EVENTS = 20;
/** GET /events' largest page: the probes that find the newest events ask for this many. */
const EVENTS_PAGE_MAX = 100;

async function api(method, path, body) {
  const response = await rest(method, path, body === undefined ? {} : { body });
  return response.status === 204 ? null : response.json();
}

const statusBadge = (status) =>
  el('span', { class: `badge ${status === 'enabled' ? 'good' : 'bad'}`, 'data-status': status }, status);

/** What the receiver answered, or why it did not. */
function attemptResult(delivery) {
  if (delivery.status_code !== null) {
    return el(
      'span',
      { class: `badge ${delivery.delivered ? 'good' : 'bad'}`, 'data-status-code': delivery.status_code },
      `HTTP ${delivery.status_code}`,
    );
  }
  return el('span', { class: 'badge bad' }, delivery.error ?? 'no answer');
}

/** The endpoint's state in words: what a developer checks when events stop arriving. */
function endpointState(endpoint) {
  return [
    statusBadge(endpoint.status),
    endpoint.disabled_reason ? el('div', { class: 'muted disabled-reason' }, endpoint.disabled_reason) : null,
    endpoint.failing_since
      ? el('div', { class: 'muted failing-since' }, `Failing since ${dateTime(endpoint.failing_since)}`)
      : null,
    endpoint.next_attempt_at
      ? el('div', { class: 'muted next-attempt' }, `Next attempt ${dateTime(endpoint.next_attempt_at)}`)
      : null,
  ];
}

const eventsText = (events) =>
  events.length === EVENT_TYPES.length ? `All ${events.length} types` : events.join(', ');

/** The table's short form; the open endpoint lists them all. */
const eventsCount = (events) =>
  events.length === EVENT_TYPES.length ? 'All types' : `${events.length} of ${EVENT_TYPES.length} types`;

/** An event's `data` as one line of text; long ids shortened, amounts as money. */
function dataSummary(data) {
  return Object.entries(data ?? {})
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => {
      if (key === 'amount_usd') {
        try {
          return `${key} ${usdDecimal(String(value))}`;
        } catch {
          return `${key} ${value}`;
        }
      }
      const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
      return `${key} ${short(text)}`;
    })
    .join(' · ');
}

/**
 * The account's last event sequence, in a few small requests. The log is dense (1, 2, 3, ...), so
 * the page after `c` is empty exactly when c ≥ the last sequence: gallop up from `hint` (a cursor
 * known not to pass the end, such as an endpoint's delivered_through) and halve back once a probe
 * overshoots. Answers the last sequence and, when the probe that found it holds enough, its page.
 */
async function findNewest(hint) {
  let low = hint; // the last sequence is ≥ low
  let high = Infinity; // ... and ≤ high
  let probe = low;
  let step = EVENTS_PAGE_MAX;
  for (let round = 0; round < 64; round++) {
    const page = await eventsAfter(probe, EVENTS_PAGE_MAX);
    const last = page.events.at(-1)?.sequence;
    if (last !== undefined && !page.has_more) return { last, events: page.events };
    if (last !== undefined) {
      low = last;
      step *= 2;
    } else {
      if (probe <= low) return { last: low, events: [] };
      high = probe;
    }
    // Once the end is known within a page, the page after `low` holds it.
    if (high === Infinity) probe = low + step;
    else probe = high - low <= EVENTS_PAGE_MAX ? low : Math.floor((low + high) / 2);
  }
  return { last: low, events: [] };
}

function eventsAfter(after, limit) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (after > 0) query.set('after', String(after));
  return api('GET', `/events?${query}`);
}

/**
 * The two cards (webhooks, recent events) for the signed-in portal page; they load themselves and
 * stop polling once the page replaces them.
 */
export function webhooksPanel() {
  let endpoints = [];
  let endpointsJson = '';
  let selectedId = null;
  let pollTimer;

  const endpointsBox = el('div', { id: 'webhook-endpoints', 'aria-live': 'polite' });
  const secretBox = el('div', { id: 'webhook-secret-box', 'aria-live': 'polite' });
  const formBox = el('div', { id: 'webhook-form-box' });
  const detailBox = el('div', { id: 'webhook-detail' });
  const addButton = el(
    'button',
    { type: 'button', id: 'add-webhook', 'aria-expanded': 'false', onclick: () => toggleForm() },
    'Add endpoint',
  );
  const card = el('section', { class: 'card', id: 'webhooks', 'aria-labelledby': 'webhooks-title' }, [
    el('div', { class: 'section-head' }, [el('h2', { id: 'webhooks-title' }, 'Webhooks'), addButton]),
    el(
      'p',
      { class: 'muted' },
      `Your account's events POSTed to your server as they happen, signed (Ledgerfeed-Signature), in order, retried for 3 days. At most ${MAX_ENDPOINTS} endpoints; managing them needs a key holding every scope.`,
    ),
    formBox,
    secretBox,
    endpointsBox,
    detailBox,
  ]);

  const eventsBox = el('div', { id: 'recent-events', 'aria-live': 'polite' });
  const refreshEvents = el(
    'button',
    { type: 'button', id: 'refresh-events', class: 'secondary', onclick: () => void loadRecentEvents() },
    'Refresh',
  );
  const eventsCard = el('section', { class: 'card', id: 'events', 'aria-labelledby': 'events-title' }, [
    el('div', { class: 'section-head' }, [el('h2', { id: 'events-title' }, 'Recent events'), refreshEvents]),
    el(
      'p',
      { class: 'muted' },
      'Newest first: what a webhook delivers and GET /api/v1/events pages (oldest first, after a cursor). An event’s sequence is the cursor a replay starts after.',
    ),
    eventsBox,
  ]);

  // ---- the endpoint list ----

  async function loadEndpoints({ quiet = false } = {}) {
    if (!quiet) show(endpointsBox, 'loading', 'Loading your webhook endpoints…');
    try {
      const { webhooks } = await api('GET', '/webhooks');
      const json = JSON.stringify(webhooks);
      // A poll that changed nothing leaves the table (and the focus in it) alone.
      if (quiet && json === endpointsJson) return;
      endpoints = webhooks;
      endpointsJson = json;
      renderEndpoints();
      // Deleted elsewhere (another tab, the API): its detail goes too.
      if (selectedId && !endpoints.some((e) => e.id === selectedId)) {
        selectedId = null;
        renderDetail();
      } else renderDetailHead();
    } catch (error) {
      if (quiet) return;
      endpoints = [];
      endpointsJson = '';
      show(endpointsBox, 'error', messageOf(error), () => void loadEndpoints());
    }
  }

  function renderEndpoints() {
    const full = endpoints.length >= MAX_ENDPOINTS;
    addButton.disabled = full;
    addButton.title = full ? `At most ${MAX_ENDPOINTS} endpoints: delete one to add another` : '';
    if (endpoints.length === 0) {
      return show(
        endpointsBox,
        'empty',
        'No endpoints yet. Add one to have your events POSTed to your server as they happen.',
      );
    }
    const rows = endpoints.map((endpoint) =>
      el(
        'tr',
        {
          'data-webhook-id': endpoint.id,
          'data-status': endpoint.status,
          class: endpoint.id === selectedId ? 'selected' : null,
        },
        [
          el('td', { class: 'mono webhook-url' }, endpoint.url),
          el('td', { class: 'hide-narrow', title: endpoint.events.join(', ') }, eventsCount(endpoint.events)),
          el('td', { class: 'webhook-state' }, endpointState(endpoint)),
          el('td', { class: 'hide-narrow' }, dateTime(endpoint.created_at)),
          el(
            'td',
            {},
            el(
              'button',
              {
                type: 'button',
                class: 'secondary open',
                'aria-pressed': endpoint.id === selectedId ? 'true' : 'false',
                'aria-label': `Deliveries and actions of ${endpoint.url}`,
                onclick: () => select(endpoint.id),
              },
              'Open',
            ),
          ),
        ],
      ),
    );
    show(
      endpointsBox,
      'ready',
      el(
        'div',
        { class: 'table-wrap' },
        el('table', {}, [
          el('caption', {}, `Your webhook endpoints, oldest first (${endpoints.length} of ${MAX_ENDPOINTS})`),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col' }, 'URL'),
              el('th', { scope: 'col', class: 'hide-narrow' }, 'Events'),
              el('th', { scope: 'col' }, 'Status'),
              el('th', { scope: 'col', class: 'hide-narrow' }, 'Created'),
              el('th', { scope: 'col' }, ''),
            ]),
          ),
          el('tbody', {}, rows),
        ]),
      ),
    );
  }

  // ---- adding one ----

  function toggleForm(open = formBox.childElementCount === 0) {
    addButton.setAttribute('aria-expanded', String(open));
    if (!open) return formBox.replaceChildren();
    const status = el('div', { 'aria-live': 'polite' });
    const url = el('input', {
      name: 'url',
      type: 'url',
      required: true,
      autocomplete: 'off',
      spellcheck: 'false',
      'aria-describedby': 'webhook-url-hint',
    });
    const boxes = EVENT_TYPES.map((type) =>
      el('label', { class: 'check' }, [
        el('input', { type: 'checkbox', name: 'events', value: type, checked: true }),
        el('span', { class: 'mono' }, type),
        TYPE_HINTS[type] ? el('span', { class: 'hint' }, ` (${TYPE_HINTS[type]})`) : null,
      ]),
    );
    const submit = el('button', { type: 'submit' }, 'Add endpoint');
    const form = el('form', { id: 'webhook-form', novalidate: true }, [
      el('label', {}, [
        'Endpoint URL',
        el(
          'span',
          { id: 'webhook-url-hint', class: 'hint' },
          'https in production; http to this machine (loopback) while developing. Private and link-local addresses are refused.',
        ),
        url,
      ]),
      el('fieldset', { class: 'checks' }, [el('legend', {}, 'Events to send'), ...boxes]),
      el('div', { class: 'row' }, [
        submit,
        el('button', { type: 'button', class: 'secondary', onclick: () => toggleForm(false) }, 'Cancel'),
      ]),
      status,
    ]);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void addEndpoint(form, status, submit);
    });
    formBox.replaceChildren(el('h3', {}, 'Add an endpoint'), form);
    url.focus();
  }

  async function addEndpoint(form, status, submit) {
    const url = form.elements.url.value.trim();
    const events = [...form.querySelectorAll('input[name=events]:checked')].map((box) => box.value);
    if (!url) return show(status, 'error', 'Enter the URL your server receives events on.');
    if (events.length === 0) return show(status, 'error', 'Choose at least one event type.');
    submit.disabled = true;
    show(status, 'loading', 'Checking the URL and adding the endpoint…');
    try {
      const created = await api('POST', '/webhooks', { url, events });
      toggleForm(false);
      showSecret(
        created.id,
        `Signing secret of ${created.url}`,
        created.secret,
        'Verify each delivery’s Ledgerfeed-Signature with it: v1 is the hex HMAC-SHA256 of "<t>.<raw body>".',
      );
      selectedId = created.id;
      await loadEndpoints({ quiet: true });
      renderDetail();
    } catch (error) {
      show(status, 'error', messageOf(error));
      submit.disabled = false;
    }
  }

  /** A secret, the one time the API shows it; `Done` takes it off the page. */
  function showSecret(endpointId, title, secret, note) {
    secretBox.dataset.webhookId = endpointId;
    show(
      secretBox,
      'ready',
      el('div', { class: 'shown-once' }, [
        el('p', { class: 'warning', role: 'note' }, [
          el('strong', {}, 'Shown once. '),
          `${title}: copy it now and store it with your receiver; it is never shown again. `,
          note,
        ]),
        el('div', { class: 'secret' }, [
          el('code', { id: 'webhook-secret' }, secret),
          copyButton(secret, 'Copy secret'),
        ]),
        el(
          'p',
          {},
          el('button', { type: 'button', id: 'secret-done', onclick: () => clearSecret() }, 'I saved it'),
        ),
      ]),
    );
  }

  function clearSecret() {
    delete secretBox.dataset.webhookId;
    secretBox.replaceChildren();
  }

  // ---- one endpoint: its actions and delivery log ----

  let logBox;
  let logJson = '';
  let olderLoaded = false;
  let headBox;
  let actionStatus;

  const selected = () => endpoints.find((e) => e.id === selectedId);

  function select(id) {
    selectedId = selectedId === id ? null : id;
    renderEndpoints();
    renderDetail();
  }

  function renderDetail() {
    clearTimeout(pollTimer);
    const endpoint = selected();
    if (!endpoint) return detailBox.replaceChildren();
    headBox = el('div', { id: 'webhook-detail-head' });
    actionStatus = el('div', { id: 'webhook-action-status', 'aria-live': 'polite' });
    logBox = el('div', { id: 'webhook-deliveries', 'aria-live': 'polite' });
    logJson = '';
    olderLoaded = false;
    const after = el('input', {
      id: 'replay-after',
      name: 'after',
      inputmode: 'numeric',
      autocomplete: 'off',
      pattern: '[0-9]*',
      'aria-describedby': 'replay-hint',
    });
    const replayButton = el('button', { type: 'submit', id: 'replay-submit', class: 'secondary' }, 'Replay');
    const replayResult = el('div', { id: 'replay-result', 'aria-live': 'polite' });
    const replayForm = el('form', { id: 'replay-form', novalidate: true }, [
      el('div', { class: 'row' }, [
        el('label', { class: 'grow' }, [
          'Replay every event after',
          el(
            'span',
            { id: 'replay-hint', class: 'hint' },
            'An event’s sequence (see Recent events); empty: from the start of the log. They are delivered again, in order.',
          ),
          after,
        ]),
        replayButton,
      ]),
      replayResult,
    ]);
    replayForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void replay(endpoint.id, after, replayButton, replayResult);
    });
    detailBox.replaceChildren(
      el(
        'section',
        {
          class: 'webhook-detail',
          'aria-labelledby': 'webhook-detail-title',
          'data-webhook-id': endpoint.id,
        },
        [
          el('h3', { id: 'webhook-detail-title' }, [
            'Endpoint ',
            el('span', { class: 'mono' }, endpoint.url),
          ]),
          headBox,
          actionStatus,
          replayForm,
          el('div', { class: 'section-head' }, [
            el('h3', {}, 'Delivery log'),
            el(
              'button',
              { type: 'button', class: 'secondary', id: 'refresh-deliveries', onclick: () => void loadLog() },
              'Refresh',
            ),
          ]),
          logBox,
        ],
      ),
    );
    renderDetailHead();
    void loadLog().finally(schedulePoll);
  }

  /** The open endpoint's state and its buttons (re-drawn when a poll finds the state changed). */
  function renderDetailHead() {
    const endpoint = selected();
    if (!endpoint || !headBox || !headBox.isConnected) return;
    const confirmBox = el('span', { class: 'row' });
    const deleteButton = el(
      'button',
      {
        type: 'button',
        class: 'danger',
        id: 'delete-webhook',
        onclick: () => {
          deleteButton.hidden = true;
          confirmBox.replaceChildren(
            el('span', {}, 'Delete this endpoint and its delivery log?'),
            el(
              'button',
              {
                type: 'button',
                class: 'danger',
                id: 'confirm-delete',
                onclick: (e) => void remove(endpoint.id, e.currentTarget),
              },
              'Delete endpoint',
            ),
            el(
              'button',
              {
                type: 'button',
                class: 'secondary',
                onclick: () => {
                  confirmBox.replaceChildren();
                  deleteButton.hidden = false;
                },
              },
              'Keep it',
            ),
          );
        },
      },
      'Delete',
    );
    headBox.replaceChildren(
      el('dl', { class: 'quote' }, [
        el('div', { class: 'wide' }, [
          el('dt', {}, 'Status'),
          el('dd', { id: 'webhook-status' }, endpointState(endpoint)),
        ]),
        el('div', { class: 'wide' }, [
          el('dt', {}, 'Events'),
          el('dd', { class: 'event-types' }, eventsText(endpoint.events)),
        ]),
        el('div', {}, [
          el('dt', {}, 'Delivered through'),
          el('dd', { id: 'delivered-through' }, `sequence ${endpoint.delivered_through}`),
        ]),
      ]),
      el('div', { class: 'row actions' }, [
        el(
          'button',
          {
            type: 'button',
            class: 'secondary',
            id: 'rotate-secret',
            onclick: (e) => void rotate(endpoint, e.currentTarget),
          },
          'Rotate secret',
        ),
        endpoint.status === 'disabled'
          ? el(
              'button',
              {
                type: 'button',
                id: 'enable-webhook',
                onclick: (e) => void enable(endpoint.id, e.currentTarget),
              },
              'Enable',
            )
          : null,
        deleteButton,
        confirmBox,
      ]),
    );
  }

  /** One button's request: its status line says what happened (`work` may answer a message). */
  async function act(button, work) {
    button.disabled = true;
    const status = actionStatus;
    show(status, 'loading', 'Working…');
    try {
      const message = await work();
      if (message) show(status, 'ready', el('p', { role: 'status' }, message));
      else show(status, 'ready', []);
    } catch (error) {
      show(actionStatus, 'error', messageOf(error));
    } finally {
      button.disabled = false;
    }
  }

  const rotate = (endpoint, button) =>
    act(button, async () => {
      const rotated = await api('POST', `/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`);
      showSecret(
        endpoint.id,
        `New signing secret of ${endpoint.url}`,
        rotated.secret,
        `Until ${dateTime(rotated.previous_secret_expires_at)} each delivery carries a second v1= signature made with the old secret, so your receiver can switch without missing one.`,
      );
    });

  const enable = (id, button) =>
    act(button, async () => {
      await api('POST', `/webhooks/${encodeURIComponent(id)}/enable`);
      await loadEndpoints({ quiet: true });
      await loadLog();
      return 'Enabled: the events it missed follow, in order.';
    });

  const remove = (id, button) =>
    act(button, async () => {
      await api('DELETE', `/webhooks/${encodeURIComponent(id)}`);
      // Nothing is signed with a deleted endpoint's secret any more: take it off the page too.
      if (secretBox.dataset.webhookId === id) clearSecret();
      selectedId = null;
      renderDetail();
      await loadEndpoints({ quiet: true });
    });

  async function replay(id, input, button, result) {
    const after = input.value.trim();
    if (after !== '' && !/^\d{1,18}$/.test(after)) {
      input.setAttribute('aria-invalid', 'true');
      return show(result, 'error', 'A cursor is an event’s sequence: digits only, or empty for the start.');
    }
    input.removeAttribute('aria-invalid');
    button.disabled = true;
    show(result, 'loading', 'Replaying…');
    try {
      await api('POST', `/webhooks/${encodeURIComponent(id)}/replay`, after === '' ? {} : { after });
      show(
        result,
        'ready',
        el(
          'p',
          { role: 'status', id: 'replay-started' },
          after === ''
            ? 'Replaying every event from the start of the log, in order.'
            : `Replaying every event after sequence ${after}, in order.`,
        ),
      );
      await loadEndpoints({ quiet: true });
      await loadLog();
    } catch (error) {
      show(result, 'error', messageOf(error));
    } finally {
      button.disabled = false;
    }
  }

  /** The newest attempts (or, with `cursor`, the next older page appended). */
  async function loadLog(cursor) {
    const box = logBox;
    const id = selectedId;
    if (!box || !id) return;
    const query = new URLSearchParams({ limit: String(LOG_PAGE) });
    if (cursor) query.set('cursor', cursor);
    let page;
    try {
      page = await api('GET', `/webhooks/${encodeURIComponent(id)}/deliveries?${query}`);
    } catch (error) {
      return show(box, 'error', messageOf(error), () => void loadLog());
    }
    if (box !== logBox) return; // another endpoint was opened meanwhile
    if (!cursor) {
      const json = JSON.stringify(page);
      if (json === logJson && box.dataset.state === 'ready') return;
      logJson = json;
      olderLoaded = false;
      renderLog(box, page, false);
    } else {
      olderLoaded = true;
      renderLog(box, page, true);
    }
  }

  function renderLog(box, page, append) {
    if (!append && page.deliveries.length === 0) {
      return show(box, 'empty', 'No delivery yet: the next event of a subscribed type is sent at once.');
    }
    const rows = page.deliveries.map((d) =>
      el(
        'tr',
        { 'data-event-id': d.event_id, 'data-sequence': d.sequence, 'data-delivered': String(d.delivered) },
        [
          el('td', {}, dateTime(d.created_at)),
          el('td', {}, [
            el('span', { class: 'mono' }, d.event_id),
            el('div', { class: 'muted' }, `sequence ${d.sequence}`),
          ]),
          el('td', { class: 'num' }, d.attempt),
          el('td', { class: 'result-cell' }, [
            attemptResult(d),
            d.status_code !== null && d.error ? el('div', { class: 'muted' }, d.error) : null,
          ]),
          el('td', { class: 'num hide-narrow' }, `${d.duration_ms} ms`),
          el('td', {}, d.next_attempt_at ? dateTime(d.next_attempt_at) : '—'),
        ],
      ),
    );
    const more = page.has_more
      ? el(
          'button',
          {
            type: 'button',
            class: 'secondary',
            id: 'older-deliveries',
            onclick: (e) => {
              e.currentTarget.remove();
              void loadLog(page.next_cursor);
            },
          },
          'Older attempts',
        )
      : null;
    if (append) {
      box.querySelector('tbody')?.append(...rows);
      if (more) box.append(more);
      return;
    }
    show(box, 'ready', [
      el(
        'div',
        { class: 'table-wrap' },
        el('table', {}, [
          el('caption', {}, 'Every attempt, newest first'),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col' }, 'Attempted'),
              el('th', { scope: 'col' }, 'Event'),
              el('th', { scope: 'col', class: 'num' }, 'Attempt'),
              el('th', { scope: 'col' }, 'Result'),
              el('th', { scope: 'col', class: 'num hide-narrow' }, 'Duration'),
              el('th', { scope: 'col' }, 'Next attempt'),
            ]),
          ),
          el('tbody', {}, rows),
        ]),
      ),
      more,
    ]);
  }

  /**
   * While an endpoint is open and the tab is visible, its state and newest attempts are re-read:
   * a developer watching for a test event sees it arrive. Older pages, once asked for, are left
   * alone (Refresh brings back the newest). Stops once the page no longer shows the panel.
   */
  function schedulePoll() {
    clearTimeout(pollTimer);
    pollTimer = setTimeout(async () => {
      if (!card.isConnected || !selectedId) return;
      if (!document.hidden) {
        await loadEndpoints({ quiet: true });
        if (!olderLoaded) await loadLog();
      }
      schedulePoll();
    }, POLL_MS);
  }

  // ---- recent events ----

  async function loadRecentEvents() {
    refreshEvents.disabled = true;
    show(eventsBox, 'loading', 'Loading your recent events…');
    try {
      const hint = Math.max(0, ...endpoints.map((e) => Number(e.delivered_through) || 0));
      const newest = await findNewest(hint);
      const events =
        newest.events.length >= RECENT_EVENTS || newest.last <= newest.events.length
          ? newest.events
          : (await eventsAfter(Math.max(0, newest.last - RECENT_EVENTS), RECENT_EVENTS)).events;
      renderRecentEvents(events.slice(-RECENT_EVENTS).reverse());
    } catch (error) {
      show(eventsBox, 'error', messageOf(error), () => void loadRecentEvents());
    } finally {
      refreshEvents.disabled = false;
    }
  }

  function renderRecentEvents(events) {
    if (events.length === 0) {
      return show(eventsBox, 'empty', 'No events yet: pay for a post, or have someone engage with yours.');
    }
    show(
      eventsBox,
      'ready',
      el(
        'div',
        { class: 'table-wrap' },
        el('table', {}, [
          el('caption', {}, `Your latest ${events.length} events, newest first`),
          el(
            'thead',
            {},
            el('tr', {}, [
              el('th', { scope: 'col', class: 'num' }, 'Sequence'),
              el('th', { scope: 'col' }, 'Type'),
              el('th', { scope: 'col' }, 'When'),
              el('th', { scope: 'col', class: 'hide-narrow' }, 'Data'),
            ]),
          ),
          el(
            'tbody',
            {},
            events.map((event) =>
              el('tr', { 'data-event-id': event.id, 'data-sequence': event.sequence }, [
                el('td', { class: 'num' }, event.sequence),
                el('td', {}, [
                  el('span', { class: 'mono' }, event.type),
                  el('div', { class: 'muted mono' }, event.id),
                ]),
                el('td', {}, dateTime(event.created_at)),
                el('td', { class: 'hide-narrow event-data' }, dataSummary(event.data)),
              ]),
            ),
          ),
        ]),
      ),
    );
  }

  void loadEndpoints().then(loadRecentEvents);
  return [card, eventsCard];
}
