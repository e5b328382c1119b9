/**
 * Text a client sends that we store and show to other people (handles, display names, bios, send
 * memos, post content). Two kinds of character are refused as bad input, by the rule that owns the
 * field, with a message naming it:
 *
 * - Control characters: C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F). None prints.
 *   U+0000 cannot even be stored (Postgres `text` refuses the whole statement); the others ring a
 *   terminal's bell, move its cursor, or break a line where a reader expects one field (a memo
 *   ending in a forged second history line). Multi-line text (post content) keeps tab, line feed
 *   and the carriage return of a CRLF pair (HTML forms send textareas that way); a lone carriage
 *   return is refused, as it overwrites the line in a terminal.
 * - Bidirectional controls: U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069. They reorder how
 *   the text after them is shown, so text can read differently from what it is ("Trojan Source",
 *   CVE-2021-42574): a memo written into the recipient's history as "Received from @x: ..." could
 *   show another sender's name or amount. Letters of right-to-left scripts are not controls and
 *   are accepted; the Unicode bidi algorithm lays them out without help.
 *
 * Every other character is the client's to choose.
 */
export interface RefusedCharacter {
  codePoint: number;
  kind: 'nul' | 'control' | 'bidi';
}

export interface TextShape {
  /** Post content: tab, line feed and CRLF are allowed. Default false (one-line fields). */
  multiline?: boolean;
}

/** The first character `value` may not hold, or undefined when every character is allowed. */
export function findRefusedCharacter(value: string, shape: TextShape = {}): RefusedCharacter | undefined {
  let index = 0;
  for (const character of value) {
    const codePoint = character.codePointAt(0)!;
    const at = index;
    index += character.length;
    if (codePoint === 0) return { codePoint, kind: 'nul' };
    if (codePoint <= 0x1f || (codePoint >= 0x7f && codePoint <= 0x9f)) {
      if (shape.multiline && allowedLineCharacter(codePoint, value, at)) continue;
      return { codePoint, kind: 'control' };
    }
    if (isBidiControl(codePoint)) return { codePoint, kind: 'bidi' };
  }
  return undefined;
}

/** Tab, line feed, or a carriage return directly followed by a line feed. */
function allowedLineCharacter(codePoint: number, value: string, at: number): boolean {
  if (codePoint === 0x09 || codePoint === 0x0a) return true;
  return codePoint === 0x0d && value.charCodeAt(at + 1) === 0x0a;
}

function isBidiControl(codePoint: number): boolean {
  return (
    codePoint === 0x061c ||
    codePoint === 0x200e ||
    codePoint === 0x200f ||
    (codePoint >= 0x202a && codePoint <= 0x202e) ||
    (codePoint >= 0x2066 && codePoint <= 0x2069)
  );
}

/** The message of a refused character: names the field, the rule and the character found. */
function refusedCharacterMessage(field: string, refused: RefusedCharacter, shape: TextShape = {}): string {
  const found = `U+${refused.codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
  switch (refused.kind) {
    case 'nul':
      return `${field} must not contain the NUL character (U+0000)`;
    case 'control':
      return shape.multiline
        ? `${field} must not contain control characters other than tab and line breaks (found ${found})`
        : `${field} must not contain control characters (found ${found})`;
    case 'bidi':
      return `${field} must not contain bidirectional control characters, which reorder how text reads (found ${found})`;
  }
}

/** The message for `value` in `field` when it holds a refused character, or undefined when it may be stored. */
export function refusedTextMessage(field: string, value: string, shape: TextShape = {}): string | undefined {
  const refused = findRefusedCharacter(value, shape);
  return refused && refusedCharacterMessage(field, refused, shape);
}
