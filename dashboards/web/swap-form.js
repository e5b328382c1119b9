import { gql } from './lib/api.js';
import { microToDollars, parsePercentToBps, parseTokens, percentOfBps, tokens, usd } from './lib/format.js';
import { el, messageOf } from './lib/ui.js';

/*
 * The creator dashboard's swap form: native tokens -> USDC through the platform pool. The quote is
 * live (GraphQL swapQuote, debounced while the person types); the swap is swapToUsdc with
 * minAmountUsdc taken from the quote on screen minus the slippage allowed, so the server refuses
 * (SLIPPAGE_EXCEEDED, nothing moved) rather than filling at a price the person never saw.
 * Amounts stay BigInt base units from the keyboard to the request.
 *
 * Each swap the person means to make carries one idempotencyKey, made when the filled form is first
 * submitted: a double submit, or Swap pressed again after an answer that never arrived, sends the
 * same request with the same key, and the server answers the first swap again instead of swapping
 * twice. The button is disabled while a swap is in flight too, but the key is what guarantees it
 * (two submits in one task, a lost answer, a second tab's retry of a key it was given).
 */

const QUOTE_DEBOUNCE_MS = 300;
const DEFAULT_SLIPPAGE = '1';
/**
 * Refusals after which nothing moved and the next press is a new swap (with a fresh quote or
 * amount), so its key is dropped. Any other failure (no answer, a 5xx, CONFLICT while the first is
 * still running) may have swapped: the key is kept and Swap sends the same request again.
 */
const REFUSED_NOTHING_MOVED = new Set(['SLIPPAGE_EXCEEDED', 'INSUFFICIENT_FUNDS', 'IDEMPOTENCY_KEY_REUSED']);

/** 128 random bits as hex. getRandomValues, not randomUUID: the page may be served over plain HTTP. */
function newIdempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `swap-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * `available()` is the native balance the page last read (base units, BigInt or null);
 * `explorerLink(signature)` is the page's own explorer link; `onSwapped()` refreshes balances.
 */
export function swapForm({ available, explorerLink, onSwapped }) {
  const amount = el('input', {
    id: 'swap-amount',
    name: 'amount',
    inputmode: 'decimal',
    autocomplete: 'off',
    placeholder: '0.0',
    'aria-describedby': 'swap-amount-hint',
  });
  const slippage = el('input', {
    id: 'swap-slippage',
    name: 'slippage',
    inputmode: 'decimal',
    autocomplete: 'off',
    value: DEFAULT_SLIPPAGE,
    'aria-describedby': 'swap-slippage-hint',
  });
  const maxButton = el('button', { type: 'button', class: 'secondary', id: 'swap-max' }, 'Max');
  const submit = el('button', { type: 'submit', id: 'swap-submit' }, 'Swap to USDC');
  const quoteBox = el('div', { id: 'swap-quote', 'aria-live': 'polite', 'data-state': 'idle' });
  const resultBox = el('div', { id: 'swap-result', 'aria-live': 'polite' });

  /** The quote on screen: { units, quote } once one answered for exactly what is typed. */
  let shown = null;
  let sequence = 0;
  let timer;
  /**
   * The swap being made: { units, bps, key, request } where `request` resolves to the exact
   * mutation variables (amount, minimum, key) or null when no quote could be had. Kept until the
   * swap answers or is refused with nothing moved, or the amount or slippage is edited; a submit
   * of the same amount and slippage meanwhile sends the same variables again.
   */
  let intent = null;

  const form = el('form', { id: 'swap-form', novalidate: true, 'aria-describedby': 'swap-help' }, [
    el('p', { id: 'swap-help', class: 'muted' }, [
      'Sell native tokens (what the creator fund pays) to the platform pool for USDC. ',
      'Priced x·y=k against the pool’s reserves on chain, with a 0.30% fee.',
    ]),
    el('div', { class: 'row' }, [
      el('label', { for: 'swap-amount', class: 'grow' }, [
        'Tokens to swap',
        el('span', { id: 'swap-amount-hint', class: 'hint' }, 'Up to 9 decimals, e.g. 12.5'),
        amount,
      ]),
      maxButton,
      el('label', { for: 'swap-slippage', class: 'narrow' }, [
        'Max slippage (%)',
        el('span', { id: 'swap-slippage-hint', class: 'hint' }, 'Empty: no minimum'),
        slippage,
      ]),
    ]),
    quoteBox,
    el('div', { class: 'row' }, [submit]),
    resultBox,
  ]);

  const slippageBps = () => parsePercentToBps(slippage.value);

  /** The least USDC to accept for `quote`, or null when no slippage bound is set. */
  const minimumOf = (quote, bps) =>
    bps === null ? null : (BigInt(quote.amountUsdcMicro) * (10_000n - bps)) / 10_000n;

  function showQuoteState(state, content) {
    quoteBox.dataset.state = state;
    quoteBox.setAttribute('aria-busy', state === 'loading' ? 'true' : 'false');
    quoteBox.replaceChildren(...[].concat(content));
  }

  function renderQuote(units, quote) {
    let bps = null;
    let slippageProblem = null;
    try {
      bps = slippageBps();
    } catch (error) {
      slippageProblem = error.message;
    }
    const minimum = slippageProblem ? null : minimumOf(quote, bps);
    const balance = available();
    const cell = (id, label, value) => el('div', {}, [el('dt', {}, label), el('dd', { id }, value)]);
    showQuoteState(
      'ready',
      [
        el('dl', { class: 'quote', 'data-amount-tokens': units.toString() }, [
          cell('quote-usdc', 'You receive', usd(quote.amountUsdcMicro)),
          cell('quote-fee', 'Fee', `${tokens(quote.feeTokens)} tokens (${percentOfBps(quote.feeBps)})`),
          cell('quote-impact', 'Price impact', percentOfBps(quote.priceImpactBps)),
          cell('quote-min', 'Minimum received', minimum === null ? 'no minimum' : usd(minimum.toString())),
        ]),
        slippageProblem ? el('p', { class: 'field-error', role: 'alert' }, slippageProblem) : null,
        balance !== null && units > balance
          ? el(
              'p',
              { class: 'field-error', id: 'swap-over-balance' },
              `More than your ${tokens(balance)} tokens.`,
            )
          : null,
      ].filter(Boolean),
    );
  }

  /** Reads what is typed; shows why it cannot be quoted, or returns its base units. */
  function typedUnits() {
    if (amount.value.trim() === '') {
      amount.removeAttribute('aria-invalid');
      showQuoteState('idle', el('p', { class: 'muted' }, 'Type an amount to see a live quote.'));
      return null;
    }
    try {
      const units = parseTokens(amount.value);
      amount.removeAttribute('aria-invalid');
      return units;
    } catch (error) {
      amount.setAttribute('aria-invalid', 'true');
      showQuoteState('invalid', el('p', { class: 'field-error', role: 'alert' }, error.message));
      return null;
    }
  }

  /** A quote for `units` now; answers null when something newer was typed meanwhile. */
  async function fetchQuote(units) {
    const mine = ++sequence;
    showQuoteState('loading', el('p', { class: 'state loading' }, 'Getting a quote…'));
    try {
      const { swapQuote } = await gql(
        'query ($amount: String!) { swapQuote(amountTokens: $amount) { amountTokens amountUsdcMicro feeTokens feeBps priceImpactBps } }',
        { amount: units.toString() },
      );
      if (mine !== sequence) return null;
      shown = { units, quote: swapQuote };
      renderQuote(units, swapQuote);
      return swapQuote;
    } catch (error) {
      if (mine !== sequence) return null;
      shown = null;
      showQuoteState('error', el('p', { class: 'field-error', role: 'alert' }, messageOf(error)));
      return null;
    }
  }

  function onAmountInput() {
    clearTimeout(timer);
    shown = null;
    intent = null; // Another amount is another swap.
    sequence++; // An answer still on its way is for an older amount.
    const units = typedUnits();
    if (units === null) return;
    showQuoteState('loading', el('p', { class: 'state loading' }, 'Getting a quote…'));
    timer = setTimeout(() => void fetchQuote(units), QUOTE_DEBOUNCE_MS);
  }

  amount.addEventListener('input', onAmountInput);
  slippage.addEventListener('input', () => {
    intent = null; // Another minimum is another request.
    if (shown) renderQuote(shown.units, shown.quote);
  });
  maxButton.addEventListener('click', () => {
    const balance = available();
    amount.value = balance === null ? '' : tokens(balance).replaceAll(',', '');
    onAmountInput();
    amount.focus();
  });

  function showResult(state, content, code) {
    resultBox.dataset.state = state;
    delete resultBox.dataset.swapTx;
    if (code) resultBox.dataset.code = code;
    else delete resultBox.dataset.code;
    resultBox.replaceChildren(
      el('div', { class: `result ${state}`, role: state === 'error' ? 'alert' : 'status' }, content),
    );
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearTimeout(timer);
    const units = typedUnits();
    if (units === null) {
      if (amount.value.trim() === '') amount.setAttribute('aria-invalid', 'true');
      showResult('error', 'Enter how many tokens to swap first.', 'BAD_USER_INPUT');
      return amount.focus();
    }
    let bps;
    try {
      bps = slippageBps();
    } catch (error) {
      showResult('error', error.message, 'BAD_USER_INPUT');
      return slippage.focus();
    }
    const balance = available();
    if (balance !== null && units > balance) {
      showResult(
        'error',
        `Not enough native tokens: you have ${tokens(balance)}, this swap needs ${tokens(units)}. Nothing was moved.`,
        'INSUFFICIENT_FUNDS',
      );
      return amount.focus();
    }
    submit.disabled = true;
    showResult('loading', 'Swapping…');
    if (!intent || intent.units !== units || intent.bps !== bps) {
      intent = { units, bps, key: newIdempotencyKey() };
      intent.request = requestFor(units, bps, intent.key);
    }
    const mine = intent;
    const forget = () => {
      if (intent === mine) intent = null;
    };
    try {
      const variables = await mine.request;
      if (!variables) {
        forget();
        showResult('error', 'No quote for this amount; see above.', 'BAD_USER_INPUT');
        return;
      }
      const { swapToUsdc: done } = await gql(
        `mutation ($amount: String!, $min: String, $key: String!) {
           swapToUsdc(amountTokens: $amount, minAmountUsdc: $min, idempotencyKey: $key) { id amountTokens amountUsdcMicro swapTx status } }`,
        variables,
      );
      forget();
      showResult(
        'success',
        [
          el('p', { id: 'swap-success' }, [
            el('strong', {}, 'Swapped '),
            `${tokens(done.amountTokens)} tokens for `,
            el('strong', { id: 'swap-received' }, usd(done.amountUsdcMicro)),
            '.',
          ]),
          el('p', {}, ['Transaction: ', explorerLink(done.swapTx)]),
          el(
            'p',
            { class: 'muted' },
            done.status === 'CONFIRMED' || done.status === 'FINALIZED'
              ? 'Confirmed on chain; the USDC is in your balance.'
              : 'Executed; the USDC shows as pending until the transaction confirms (seconds).',
          ),
        ],
        done.status,
      );
      resultBox.dataset.swapTx = done.swapTx;
      amount.value = '';
      shown = null;
      typedUnits();
      await onSwapped(done);
    } catch (error) {
      if (REFUSED_NOTHING_MOVED.has(error.code)) forget();
      showResult('error', swapErrorText(error), error.code);
      // Prices moved or the balance is not what the page thought: show the quote as it is now.
      if (error.code === 'SLIPPAGE_EXCEEDED') void fetchQuote(units);
      if (error.code === 'INSUFFICIENT_FUNDS') await onSwapped(null);
    } finally {
      submit.disabled = false;
    }
  });

  /**
   * The mutation's variables for a swap of `units` with at most `bps` of slippage: the bound comes
   * from the quote the person is looking at; without one, quote first. Null when no quote answered.
   */
  async function requestFor(units, bps, key) {
    const quote = shown && shown.units === units ? shown.quote : await fetchQuote(units);
    if (!quote) return null;
    const minimum = minimumOf(quote, bps);
    return { amount: units.toString(), min: minimum === null ? null : microToDollars(minimum), key };
  }

  typedUnits();
  return form;
}

function swapErrorText(error) {
  if (error.code === 'SLIPPAGE_EXCEEDED') {
    return `The price moved: ${error.message}. Check the new quote and swap again, or allow more slippage.`;
  }
  if (error.code === 'INSUFFICIENT_FUNDS') {
    const { balanceTokens, requiredTokens } = error.details ?? {};
    return balanceTokens !== undefined && requiredTokens !== undefined
      ? `Not enough native tokens: you have ${tokens(balanceTokens)}, this swap needs ${tokens(requiredTokens)}. Nothing was moved.`
      : `${error.message}. Nothing was moved.`;
  }
  return messageOf(error);
}
