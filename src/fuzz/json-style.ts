/**
 * Spellings of the same JSON document. Hookline sends only `compact` (JSON.stringify's), so that is
 * the spelling every case signs and every accepted case sends; the others are for re-spelling a
 * body after signing, which a receiver must refuse even though it parses to the same value.
 */
export const JSON_STYLES = ['compact', 'pretty', 'spaced', 'escaped', 'newline'] as const;
export type JsonStyle = (typeof JSON_STYLES)[number];

/** The spellings Hookline never sends: what a re-spelled body is sent in. */
export const RESPELLINGS = JSON_STYLES.filter((style): style is Exclude<JsonStyle, 'compact'> => style !== 'compact');

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** `value` written in `style`; `JSON.parse` of the result equals `value` for every style. */
export function spellJson(value: unknown, style: JsonStyle): string {
  switch (style) {
    case 'compact':
      return JSON.stringify(value);
    case 'pretty':
      return JSON.stringify(value, null, 2);
    case 'newline':
      return `${JSON.stringify(value)}\n`;
    case 'spaced':
      return spell(value, ', ', ': ', JSON.stringify);
    case 'escaped':
      return spell(value, ',', ':', escapeString);
  }
}

function spell(value: unknown, itemSeparator: string, keySeparator: string, quote: (text: string) => string): string {
  if (Array.isArray(value)) return `[${value.map((item) => spell(item, itemSeparator, keySeparator, quote)).join(itemSeparator)}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([key, item]) => `${quote(key)}${keySeparator}${spell(item, itemSeparator, keySeparator, quote)}`);
    return `{${entries.join(itemSeparator)}}`;
  }
  return typeof value === 'string' ? quote(value) : JSON.stringify(value);
}

/** Every character but letters, digits, space, `_` and `-` as a `\uXXXX` escape (valid JSON, unusual bytes). */
function escapeString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    out += /[A-Za-z0-9 _-]/.test(char) ? char : `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`;
  }
  return `${out}"`;
}
