import { AppError } from '../errors.js';

/**
 * A page size from a client (a query string's digits, or a GraphQL Int): 1 to `max`, `fallback`
 * when absent. Anything else is refused naming the rule, rather than silently clamped: a client
 * asking for 500 would otherwise page through 50 and never know why.
 */
export function parsePageLimit(
  raw: unknown,
  rule: { max: number; fallback: number; field?: string },
): number {
  const field = rule.field ?? 'limit';
  if (raw === undefined || raw === null) return rule.fallback;
  const value = typeof raw === 'string' && /^-?\d{1,9}$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > rule.max) {
    throw new AppError(
      'invalid_request',
      `${field} must be an integer from 1 to ${rule.max} (default ${rule.fallback})`,
      { field },
    );
  }
  return value;
}
