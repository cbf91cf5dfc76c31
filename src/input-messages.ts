import { z } from 'zod';

/**
 * Schema builders whose validation messages name every allowed value and what was sent, in plain
 * words: a caller who typed `service.trigger.evnt` or `trigger_idd` learns the right spelling from
 * the answer, over HTTP and in the NATS rejected-events log alike (both parse with these schemas).
 */

function shown(input: unknown): string {
  if (input === undefined) return 'nothing';
  const text = JSON.stringify(input) ?? String(input);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** A string enum; a wrong or missing value is answered with the list of allowed ones. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, what: string) {
  return z.enum(values, { error: (issue) => `must be one of the ${what}: ${values.join(', ')}; got ${shown(issue.input)}` });
}

/** A strict object whose unknown keys are answered with the keys it may hold. */
export function strictShape<Shape extends z.ZodRawShape>(shape: Shape, what: string) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}: ${what} may hold only ${allowed}`;
      if (issue.code === 'invalid_type') return `must be a JSON object (${what}); got ${shown(issue.input)}`;
      return undefined;
    },
  });
}

/**
 * A whole number from `min` to `max`; anything else (a fraction, a string, out of range) is answered
 * with the range, what sets its top (`bound`, e.g. a setting's name) and what was sent.
 */
export function wholeNumberFrom(min: number, max: number, bound?: string) {
  const message = (issue: { input?: unknown }) => `must be a whole number from ${min} to ${max}${bound ? ` (${bound})` : ''}, got ${shown(issue.input)}`;
  // abort: a number past the safe integers would also be reported as above `max`.
  return z.number({ error: message }).int({ error: message, abort: true }).min(min, { error: message }).max(max, { error: message });
}
