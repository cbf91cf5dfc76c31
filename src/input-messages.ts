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

/**
 * The message of a field that is not `what` it must be, alike for every field: `required, <what>`
 * when it is missing, `must be <what>; got <what was sent>` otherwise (`data: required, an object`,
 * `callbackUrl: must be an absolute http or https URL; got "ftp://x"`).
 */
export function expected(what: string) {
  return (issue: { input?: unknown }) => (issue.input === undefined ? `required, ${what}` : `must be ${what}; got ${shown(issue.input)}`);
}

/** A string enum; a wrong or missing value is answered with the list of allowed ones. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, what: string) {
  return z.enum(values, { error: expected(`one of the ${what}: ${values.join(', ')}`) });
}

/** Keys compared loosely: case, `_` and `-` aside (`callbackURL`, `tenantId` for `callback_url`, `tenant_id`). */
const looseKey = (key: string) => key.toLowerCase().replace(/[_-]/g, '');

/** Edits (insert, delete, replace) from `a` to `b`, or `limit + 1` once past `limit`. */
function editsBetween(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    if (Math.min(...row) > limit) return limit + 1;
    previous = row;
  }
  return previous[b.length]!;
}

/** The allowed key an unknown one was probably meant to be: the same but for case, `_` or `-`, or two edits away. */
export function likelyMeant(key: string, allowed: readonly string[]): string | undefined {
  const loose = looseKey(key);
  const same = allowed.find((candidate) => looseKey(candidate) === loose);
  if (same !== undefined || loose.length < 4) return same;
  return allowed.find((candidate) => editsBetween(loose, looseKey(candidate), 2) <= 2);
}

/** A strict object whose unknown keys are answered with the keys it may hold. */
export function strictShape<Shape extends z.ZodRawShape>(shape: Shape, what: string) {
  const keys = Object.keys(shape);
  const allowed = keys.join(', ');
  const named = (key: string) => {
    const meant = likelyMeant(key, keys);
    return meant === undefined ? `"${key}"` : `"${key}" (did you mean "${meant}"?)`;
  };
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map(named).join(', ')}: ${what} may hold only ${allowed}`;
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
  const what = `a whole number from ${min} to ${max}${bound ? ` (${bound})` : ''}`;
  const message = (issue: { input?: unknown }) => (issue.input === undefined ? `required, ${what}` : `must be ${what}, got ${shown(issue.input)}`);
  // abort: a number past the safe integers would also be reported as above `max`.
  return z.number({ error: message }).int({ error: message, abort: true }).min(min, { error: message }).max(max, { error: message });
}

/** One problem with an input: where (dot-separated, empty for the input as a whole) and what. */
export type InputProblem = { path: string; message: string };

/** Each issue of a failed parse, its path below `root` (e.g. `body`, or nothing for a NATS message). */
export function inputProblems(error: z.ZodError, root: readonly (string | number)[] = []): InputProblem[] {
  return error.issues.map((issue) => ({ path: [...root, ...issue.path].map(String).join('.'), message: issue.message }));
}

/** The problems as one line, `path: message; …`; a problem with the whole input is its message alone. */
export function problemsLine(problems: readonly InputProblem[]): string {
  return problems.map((problem) => (problem.path === '' ? problem.message : `${problem.path}: ${problem.message}`)).join('; ');
}
