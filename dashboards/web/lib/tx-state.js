import { el } from './ui.js';

/** How each TransactionStatus reads: a word, its tone and what it means (the badge's tooltip). */
const STATES = {
  PENDING: { label: 'pending', tone: 'pending', title: 'Sent, not confirmed on chain yet' },
  CONFIRMED: { label: 'confirmed', tone: '', title: 'Confirmed on chain, not final yet' },
  FINALIZED: { label: 'finalized', tone: 'good', title: 'Final on chain' },
  FAILED: { label: 'failed', tone: 'bad', title: 'Failed on chain: the money went back' },
};

/** The state of a money move's transaction as a small badge; a dash for one without a transaction. */
export function stateBadge(status) {
  const state = STATES[status];
  if (!state) return '—';
  return el(
    'span',
    { class: `badge tx-state ${state.tone}`.trim(), 'data-status': status.toLowerCase(), title: state.title },
    state.label,
  );
}
