import { describe, expect, test } from 'vitest';
import { findRefusedCharacter, refusedTextMessage } from './storable-text.js';

const codePoints = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i));

const C0 = codePoints(0x00, 0x1f);
const DEL_AND_C1 = codePoints(0x7f, 0x9f);
const BIDI = ['\u061c', '\u200e', '\u200f', ...codePoints(0x202a, 0x202e), ...codePoints(0x2066, 0x2069)];

describe('findRefusedCharacter', () => {
  test('refuses every C0 and C1 control and DEL in one-line text', () => {
    for (const character of [...C0, ...DEL_AND_C1]) {
      expect(findRefusedCharacter(`a${character}b`), JSON.stringify(character)).toEqual({
        codePoint: character.codePointAt(0),
        kind: character === '\u0000' ? 'nul' : 'control',
      });
    }
  });

  test('refuses every bidirectional control, in one-line and multi-line text', () => {
    for (const character of BIDI) {
      for (const shape of [{}, { multiline: true }]) {
        expect(findRefusedCharacter(`evil${character}gnp.exe`, shape)).toEqual({
          codePoint: character.codePointAt(0),
          kind: 'bidi',
        });
      }
    }
  });

  test('multi-line text keeps tab, line feed and CRLF, and refuses a lone carriage return and other controls', () => {
    expect(findRefusedCharacter('line one\n\tline two\r\nline three\n', { multiline: true })).toBeUndefined();
    expect(findRefusedCharacter('over\rwritten', { multiline: true })).toEqual({
      codePoint: 0x0d,
      kind: 'control',
    });
    expect(findRefusedCharacter('ends in\r', { multiline: true })).toEqual({
      codePoint: 0x0d,
      kind: 'control',
    });
    for (const character of [...C0, ...DEL_AND_C1].filter((c) => !'\t\n\r'.includes(c))) {
      expect(findRefusedCharacter(`a${character}`, { multiline: true })?.codePoint).toBe(
        character.codePointAt(0),
      );
    }
    // One-line text has no line breaks at all.
    expect(findRefusedCharacter('a\nb')).toEqual({ codePoint: 0x0a, kind: 'control' });
    expect(findRefusedCharacter('a\tb')).toEqual({ codePoint: 0x09, kind: 'control' });
  });

  test('accepts letters of every script, emoji sequences and the characters next to the refused ranges', () => {
    const fine = [
      'plain ascii ~!@#$%^&*()_+',
      'שלום עולם', // Hebrew: right-to-left letters need no controls
      'مرحبا بالعالم',
      'नमस्ते',
      '👩🏽‍💻 🇺🇦', // zero-width joiner and regional indicators
      '\u00a0\u00a9 é', // just past C1: no-break space, ©
      '\u061b\u061d\u200d\u2010\u2029\u2065\u206a', // neighbours of the bidi controls
      '',
    ];
    for (const value of fine) {
      expect(findRefusedCharacter(value), value).toBeUndefined();
      expect(findRefusedCharacter(value, { multiline: true }), value).toBeUndefined();
    }
  });

  test('reports the first refused character, counting astral characters whole', () => {
    expect(findRefusedCharacter('🙂\u202e\u0007')).toEqual({ codePoint: 0x202e, kind: 'bidi' });
    expect(findRefusedCharacter('🙂\r\n', { multiline: true })).toBeUndefined();
  });
});

describe('refusedTextMessage', () => {
  test('names the field and the character found, or is undefined for text that may be stored', () => {
    expect(refusedTextMessage('memo', 'lunch')).toBeUndefined();
    expect(refusedTextMessage('memo', 'x\u202ey')).toBe(
      'memo must not contain bidirectional control characters, which reorder how text reads (found U+202E)',
    );
    expect(refusedTextMessage('bio', '\u0007')).toBe(
      'bio must not contain control characters (found U+0007)',
    );
    expect(refusedTextMessage('content', 'a\u0085', { multiline: true })).toBe(
      'content must not contain control characters other than tab and line breaks (found U+0085)',
    );
    // The NUL message every field gave before this rule (test/nul-characters.test.ts).
    expect(refusedTextMessage('display_name', 'a\u0000')).toBe(
      'display_name must not contain the NUL character (U+0000)',
    );
  });
});
