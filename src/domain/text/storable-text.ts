/**
 * Text a client sends that we store: Postgres `text` cannot hold U+0000 (it refuses the whole
 * statement), so a NUL character is refused here as bad input, by the rule that owns the field,
 * instead of surfacing later as a database error. Other characters are the client's to choose.
 */
export function containsNul(value: string): boolean {
  return value.includes('\u0000');
}

/** The message every field gives for a NUL character. */
export function nulMessage(field: string): string {
  return `${field} must not contain the NUL character (U+0000)`;
}
