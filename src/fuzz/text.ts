/**
 * Text as real events carry it: accents, CJK, emoji (with joiners), the JSON-legal line separators
 * U+2028/U+2029 and non-breaking spaces. Receivers that decode bodies as latin1, or each chunk as
 * UTF-8 on its own, pass ASCII and break on these.
 */
import fc from 'fast-check';

/** Characters of 2, 3 and 4 UTF-8 bytes; the first is the one shrinking ends on. */
export const NON_ASCII = ['é', 'ñ', 'ß', 'Ω', 'ж', '€', '\u00a0', '中', '文', '日本', '한', '\u2028', '\u2029', '😀', '🎉', '👩\u200d💻'] as const;

const word = fc.stringMatching(/^[a-z ]{1,12}$/);

/** A short text with at least one non-ASCII character, mixed with ASCII words. */
export const unicodeText: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(...NON_ASCII), fc.array(fc.oneof(fc.constantFrom(...NON_ASCII), word), { maxLength: 24 }))
  .map(([first, rest]) => first + rest.join(''));

/** A few non-ASCII characters repeated to fill a large body (any of them splits when cut mid-way). */
export const filler: fc.Arbitrary<string> = fc.array(fc.constantFrom(...NON_ASCII), { minLength: 1, maxLength: 4 }).map((chars) => `${chars.join('')} `);

/**
 * Offsets that cut `body` into `pieces` writes, each cut moved forward onto a UTF-8 continuation byte
 * when one is near, so that the cut falls inside a multi-byte character.
 */
export function splitsInsideCharacters(body: Uint8Array, pieces: number): number[] {
  const splits: number[] = [];
  for (let piece = 1; piece < pieces; piece++) {
    let at = Math.floor((body.length * piece) / pieces);
    for (let look = at; look < Math.min(body.length, at + 8); look++) {
      if ((body[look]! & 0xc0) === 0x80) {
        at = look;
        break;
      }
    }
    if (at > (splits[splits.length - 1] ?? 0) && at < body.length) splits.push(at);
  }
  return splits;
}

/** Whether any split falls inside a multi-byte character of `body`. */
export const splitsACharacter = (body: Uint8Array, splits: readonly number[]): boolean => splits.some((at) => (body[at]! & 0xc0) === 0x80);
