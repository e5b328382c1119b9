import { ApiError, gql, rest } from './lib/api.js';
import { dateTime, usd } from './lib/format.js';
import { apiKey, signIn } from './lib/session.js';
import { copyButton, el, initHeader, messageOf, show, card } from './lib/ui.js';
import { webhooksPanel } from './webhooks-panel.js';

/*
 * Developer portal: sign up (POST /api/v1/accounts, the open sign-up), the first key shown once,
 * sign in with a key (kept in sessionStorage), the own keys (list, create, revoke), the dev faucet
 * on the localnet, the webhooks panel (webhooks-panel.js), and for admins the way into the queue
 * dashboard.
 */

const page = document.getElementById('page');
initHeader();

if (apiKey()) void renderAccount();
else renderSignedOut();

function renderSignedOut(notice) {
  const signupStatus = el('div', { 'aria-live': 'polite' });
  const signinStatus = el('div', { 'aria-live': 'polite' });
  const signup = el('form', { id: 'signup-form', novalidate: true }, [
    el('label', {}, [
      'Handle',
      el('input', {
        name: 'handle',
        required: true,
        autocomplete: 'username',
        pattern: '[a-z0-9_]{3,20}',
        placeholder: 'ada_l',
      }),
    ]),
    el('label', {}, [
      'Display name',
      el('input', { name: 'display_name', maxlength: 50, placeholder: 'Ada Lovelace' }),
    ]),
    el('button', { type: 'submit' }, 'Create account'),
    signupStatus,
  ]);
  const signinForm = el('form', { id: 'signin-form' }, [
    el('label', {}, [
      'API key',
      el('input', {
        name: 'key',
        required: true,
        autocomplete: 'off',
        spellcheck: 'false',
        placeholder: 'lf_live_…',
      }),
    ]),
    el('button', { type: 'submit' }, 'Sign in'),
    el(
      'p',
      { class: 'muted' },
      'The key stays in this browser tab (sessionStorage) and is forgotten when you close it.',
    ),
    signinStatus,
  ]);
  signup.addEventListener('submit', (event) => {
    event.preventDefault();
    void createAccount(signup, signupStatus);
  });
  signinForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void trySignIn(signinForm.elements.key.value, signinStatus, signinForm.querySelector('button'));
  });
  page.replaceChildren(
    ...(notice ? [el('p', { class: 'state error', role: 'alert' }, notice)] : []),
    el('div', { class: 'grid' }, [
      card('signup', 'Create an account', signup),
      card('signin', 'Sign in with an API key', signinForm),
    ]),
  );
}

async function createAccount(form, status) {
  const handle = form.elements.handle.value.trim();
  const displayName = form.elements.display_name.value.trim();
  const button = form.querySelector('button');
  button.disabled = true;
  show(status, 'loading', 'Creating your account and wallet…');
  try {
    const response = await rest('POST', '/accounts', {
      body: { handle, ...(displayName ? { display_name: displayName } : {}) },
    });
    const { account, api_key: key } = await response.json();
    showNewAccount(account, key);
  } catch (error) {
    show(status, 'error', messageOf(error));
    button.disabled = false;
  }
}

function showNewAccount(account, key) {
  page.replaceChildren(
    el('section', { class: 'card', id: 'new-account', 'aria-labelledby': 'new-title' }, [
      el('h2', { id: 'new-title' }, `Welcome, @${account.handle}`),
      el('dl', { class: 'stats' }, [
        el('div', {}, [el('dt', {}, 'Handle'), el('dd', {}, `@${account.handle}`)]),
        el('div', {}, [
          el('dt', {}, 'Wallet address'),
          el('dd', { class: 'mono', id: 'wallet-address' }, account.wallet_address),
        ]),
      ]),
      el('h3', {}, 'Your API key'),
      el('p', { class: 'warning', role: 'note' }, [
        el('strong', {}, 'Shown once. '),
        'Copy it now and keep it somewhere safe: we store only a hash, so nobody can show it to you again. Anyone holding it can spend your balance.',
      ]),
      el('div', { class: 'secret' }, [el('code', { id: 'new-key' }, key), copyButton(key, 'Copy key')]),
      el('p', {}, [
        el(
          'button',
          {
            type: 'button',
            id: 'continue',
            onclick: () => {
              signIn(key);
              void renderAccount();
            },
          },
          'I saved it — continue',
        ),
      ]),
    ]),
  );
}

async function trySignIn(key, status, button) {
  if (!key.trim()) return;
  button.disabled = true;
  show(status, 'loading', 'Checking the key…');
  signIn(key);
  try {
    await gql('{ viewer { handle } }');
    await renderAccount();
  } catch (error) {
    sessionStorage.clear();
    show(
      status,
      'error',
      error instanceof ApiError && error.status === 401 ? 'That key is not valid.' : messageOf(error),
    );
    button.disabled = false;
  }
}

async function renderAccount() {
  initHeader();
  show(page, 'loading', 'Loading your account…');
  let data;
  try {
    data = await gql(`{
      viewer { handle displayName role walletAddress earnedUsdc pendingUsdc totalEarned totalSpent
               apiKeys { id scopes createdAt lastUsedAt revokedAt } }
      chainInfo { cluster faucetAvailable }
    }`);
  } catch (error) {
    if (error.status === 401 || error.code === 'UNAUTHENTICATED') {
      sessionStorage.clear();
      initHeader();
      return renderSignedOut('That API key is not valid any more. Sign in with another one.');
    }
    return show(page, 'error', messageOf(error), () => void renderAccount());
  }
  const { viewer, chainInfo } = data;
  const keysBox = el('div', { id: 'keys', 'aria-live': 'polite' });
  const newKeyBox = el('div', { 'aria-live': 'polite' });
  const faucetBox = el('div', { 'aria-live': 'polite' });
  const createButton = el(
    'button',
    { type: 'button', id: 'create-key', onclick: () => void createKey(createButton, newKeyBox, keysBox) },
    'Create another key',
  );
  page.replaceChildren(
    el('section', { class: 'card', 'aria-labelledby': 'account-title' }, [
      el('h2', { id: 'account-title' }, `@${viewer.handle}`),
      el('p', { class: 'muted' }, [
        viewer.displayName || 'No display name',
        ' · role ',
        el('strong', { id: 'role' }, viewer.role.toLowerCase()),
      ]),
      el('dl', { class: 'stats' }, [
        el('div', {}, [el('dt', {}, 'Balance'), el('dd', { id: 'balance' }, usd(viewer.earnedUsdc))]),
        el('div', {}, [el('dt', {}, 'Pending'), el('dd', {}, usd(viewer.pendingUsdc))]),
        el('div', {}, [el('dt', {}, 'Total earned'), el('dd', {}, usd(viewer.totalEarned))]),
        el('div', {}, [el('dt', {}, 'Total spent'), el('dd', {}, usd(viewer.totalSpent))]),
      ]),
      el('p', {}, [
        'Wallet ',
        el('code', { id: 'wallet-address' }, viewer.walletAddress),
        ' on ',
        el('strong', {}, chainInfo.cluster),
      ]),
      chainInfo.faucetAvailable
        ? el('div', { class: 'row' }, [
            el(
              'button',
              {
                type: 'button',
                id: 'faucet',
                class: 'secondary',
                onclick: (e) => void faucet(e.currentTarget, faucetBox),
              },
              'Fund my wallet with $10 (localnet faucet)',
            ),
            faucetBox,
          ])
        : el('p', { class: 'muted' }, 'No faucet on this cluster: deposit USDC to the wallet address.'),
      viewer.role === 'ADMIN' ? adminPanel() : null,
    ]),
    el('section', { class: 'card', 'aria-labelledby': 'keys-title' }, [
      el('div', { class: 'section-head' }, [el('h2', { id: 'keys-title' }, 'API keys'), createButton]),
      el('p', { class: 'muted' }, 'At most 2 active keys. Secrets are never shown again after creation.'),
      newKeyBox,
      keysBox,
    ]),
    ...webhooksPanel(),
  );
  renderKeys(keysBox, viewer.apiKeys);
}

function renderKeys(box, keys) {
  if (keys.length === 0) return show(box, 'empty', 'No keys.');
  const current = apiKey()?.slice(8, 16);
  const rows = keys.map((key) =>
    el('tr', { 'data-key-id': key.id }, [
      el('td', { class: 'mono' }, [
        key.id,
        key.id === current ? el('span', { class: 'badge' }, ' this tab') : null,
      ]),
      el('td', {}, key.scopes.map((s) => s.toLowerCase()).join(', ')),
      el('td', {}, dateTime(key.createdAt)),
      el('td', {}, key.lastUsedAt ? dateTime(key.lastUsedAt) : 'never'),
      el(
        'td',
        {},
        key.revokedAt
          ? el('span', { class: 'badge bad' }, 'revoked')
          : el('span', { class: 'badge good' }, 'active'),
      ),
      el(
        'td',
        {},
        key.revokedAt
          ? ''
          : el(
              'button',
              {
                type: 'button',
                class: 'danger',
                'aria-label': `Revoke key ${key.id}`,
                onclick: (e) => void revoke(e.currentTarget, key.id, key.id === current, box),
              },
              'Revoke',
            ),
      ),
    ]),
  );
  show(
    box,
    'ready',
    el(
      'div',
      { class: 'table-wrap' },
      el('table', {}, [
        el('caption', {}, 'Your API keys, oldest first'),
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ['Key id', 'Scopes', 'Created', 'Last used', 'Status', ''].map((h) =>
              el('th', { scope: 'col' }, h),
            ),
          ),
        ),
        el('tbody', {}, rows),
      ]),
    ),
  );
}

async function reloadKeys(box) {
  try {
    const data = await gql('{ viewer { apiKeys { id scopes createdAt lastUsedAt revokedAt } } }');
    renderKeys(box, data.viewer.apiKeys);
  } catch (error) {
    show(box, 'error', messageOf(error), () => void reloadKeys(box));
  }
}

async function createKey(button, box, keysBox) {
  button.disabled = true;
  show(box, 'loading', 'Creating a key…');
  try {
    const { createApiKey } = await gql('mutation { createApiKey { key apiKey { id } } }');
    show(
      box,
      'ready',
      el('div', { id: 'created-key' }, [
        el('p', { class: 'warning', role: 'note' }, [
          el('strong', {}, 'Shown once. '),
          `Key ${createApiKey.apiKey.id} is below: copy it now.`,
        ]),
        el('div', { class: 'secret' }, [
          el('code', { id: 'second-key' }, createApiKey.key),
          copyButton(createApiKey.key, 'Copy key'),
        ]),
      ]),
    );
    await reloadKeys(keysBox);
  } catch (error) {
    show(box, 'error', messageOf(error));
  } finally {
    button.disabled = false;
  }
}

async function revoke(button, id, isCurrent, box) {
  if (isCurrent && !confirm('This is the key this tab is signed in with. Revoke it and sign out?')) return;
  button.disabled = true;
  try {
    await gql('mutation ($id: ID!) { revokeApiKey(id: $id) }', { id });
    // A revoked key's secret has nothing left to copy: take it off the page.
    document.getElementById('created-key')?.remove();
    if (isCurrent) {
      sessionStorage.clear();
      initHeader();
      return renderSignedOut('Key revoked. Sign in with another key.');
    }
    await reloadKeys(box);
  } catch (error) {
    button.disabled = false;
    show(box, 'error', messageOf(error), () => void reloadKeys(box));
  }
}

async function faucet(button, box) {
  button.disabled = true;
  show(box, 'loading', 'Minting localnet USDC…');
  try {
    const { devFaucet } = await gql('mutation { devFaucet { signature amountUsdMicro } }');
    const { viewer } = await gql('{ viewer { earnedUsdc } }');
    document.getElementById('balance').textContent = usd(viewer.earnedUsdc);
    show(
      box,
      'ready',
      el('span', { id: 'faucet-result', role: 'status' }, `Funded ${usd(devFaucet.amountUsdMicro)}.`),
    );
  } catch (error) {
    show(box, 'error', messageOf(error));
  } finally {
    button.disabled = false;
  }
}

function adminPanel() {
  const status = el('div', { 'aria-live': 'polite' });
  const open = el(
    'button',
    {
      type: 'button',
      id: 'open-queues',
      class: 'secondary',
      onclick: async () => {
        open.disabled = true;
        try {
          // Trades the key for a short-lived HttpOnly cookie: the queue pages are plain navigations.
          await fetch('/dashboard/session', {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey()}` },
          }).then(async (r) => {
            if (!r.ok) throw new ApiError('forbidden', (await r.json()).message, r.status);
          });
          location.href = '/admin/queues';
        } catch (error) {
          show(status, 'error', messageOf(error));
          open.disabled = false;
        }
      },
    },
    'Open the queue dashboard',
  );
  return el('div', { class: 'row' }, [
    open,
    el('span', { class: 'muted' }, 'Admin: opens bull-board for 15 minutes.'),
    status,
  ]);
}
