import { apiKey, signOut } from './session.js';

/** A DOM element: el('td', { class: 'num' }, ['text', child]). Text is always set as text, never HTML. */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of [].concat(children)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * Puts a section into one of its states: 'loading', 'empty', 'error' (with a retry button when
 * `retry` is given) or 'ready' (the content node). The container is an aria-live region, so screen
 * readers hear the change.
 */
/** A titled card: a section labelled by its own h2 (id `${id}-title`). */
export function card(id, title, ...children) {
  return el('section', { class: 'card', 'aria-labelledby': `${id}-title` }, [
    el('h2', { id: `${id}-title` }, title),
    ...children,
  ]);
}

export function show(container, state, content, retry) {
  container.setAttribute('aria-busy', state === 'loading' ? 'true' : 'false');
  container.dataset.state = state;
  if (state === 'loading') {
    container.replaceChildren(
      el('p', { class: 'state loading' }, [
        el('span', { class: 'spinner', 'aria-hidden': 'true' }),
        content ?? 'Loading…',
      ]),
    );
  } else if (state === 'empty') {
    container.replaceChildren(el('p', { class: 'state empty' }, content));
  } else if (state === 'error') {
    container.replaceChildren(
      el('div', { class: 'state error', role: 'alert' }, [
        el('p', {}, content),
        retry ? el('button', { type: 'button', class: 'secondary', onclick: retry }, 'Retry') : null,
      ]),
    );
  } else {
    container.replaceChildren(
      ...[].concat(content).filter((child) => child !== null && child !== undefined && child !== false),
    );
  }
}

/** The message a person should read for an error: the API's own words, or a plain fallback. */
export function messageOf(error) {
  if (error?.code === 'UNAUTHENTICATED' || error?.code === 'unauthorized') {
    return 'Your API key is not valid any more (revoked?). Sign in again on the portal.';
  }
  return error?.message || 'Something went wrong.';
}

/** A copy-to-clipboard button for `text`; says "Copied" for a moment. */
export function copyButton(text, label = 'Copy') {
  const button = el(
    'button',
    { type: 'button', class: 'secondary copy', 'aria-label': `${label} to clipboard` },
    label,
  );
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = 'Copied';
    } catch {
      // Clipboard refused (insecure context): select the text so the user can copy it by hand.
      const target = button.previousElementSibling;
      if (target) getSelection()?.selectAllChildren(target);
      button.textContent = 'Select and copy';
    }
    setTimeout(() => (button.textContent = label), 2000);
  });
  return button;
}

/** Marks the current page in the shared header and wires sign-out. */
export function initHeader() {
  const here = location.pathname.replace(/\/$/, '') || '/dashboard';
  for (const link of document.querySelectorAll('header nav a')) {
    if (link.getAttribute('href').replace(/\/$/, '') === here) link.setAttribute('aria-current', 'page');
  }
  const out = document.getElementById('sign-out');
  if (out) {
    out.hidden = !apiKey();
    out.addEventListener('click', () => {
      signOut();
      location.href = '/dashboard/';
    });
  }
}

/** For pages that need a key: a sign-in prompt instead of the page when there is none. */
export function requireKey(main) {
  if (apiKey()) return true;
  main.replaceChildren(
    el('section', { class: 'card' }, [
      el('h2', {}, 'Sign in first'),
      el('p', {}, [
        'This page needs your API key. ',
        el('a', { href: '/dashboard/' }, 'Sign in on the developer portal'),
        '.',
      ]),
    ]),
  );
  return false;
}
