/**
 * Payload filters: a small JSON rule language over an event's envelope, checked once when a webhook
 * is configured (here) and evaluated for every event at ingest (evaluate.ts). Pure, no `eval`.
 *
 * Grammar. A rule is a JSON object whose keys are ANDed. A key is
 * - a path: `type`, `metadata.<one of the seven keys>` or `data.<key>[.<key>…]` (a segment of
 *   digits also indexes an array), mapped to a plain value (string, number, boolean or null: equal
 *   to it) or to an object of operators, ANDed: `$in` (a list of plain values), `$exists` (a
 *   boolean), `$gt` `$gte` `$lt` `$lte` (a number, or an ISO 8601 date-time compared as an
 *   instant) and `$prefix` (a string);
 * - `$and` / `$or`: a non-empty list of rules; `$not`: one rule.
 * The top-level rule has depth 1 and each `$and`/`$or`/`$not` adds one: at most `FILTER_LIMITS.depth`.
 * Its compact JSON is at most `FILTER_LIMITS.bytes` bytes.
 */
import { nestsAtMost } from '../json-depth.js';
import { METADATA_KEYS } from '../sdk/types.js';

export type FilterScalar = string | number | boolean | null;

export interface FilterOperators {
  $in?: FilterScalar[];
  $exists?: boolean;
  $gt?: number | string;
  $gte?: number | string;
  $lt?: number | string;
  $lte?: number | string;
  $prefix?: string;
}

/** A checked rule (see the grammar above). */
export interface FilterRule {
  $and?: FilterRule[];
  $or?: FilterRule[];
  $not?: FilterRule;
  [path: string]: FilterScalar | FilterOperators | FilterRule | FilterRule[] | undefined;
}

export const FILTER_LIMITS = { depth: 8, bytes: 4096 } as const;

export const COMPARISON_OPERATORS = ['$gt', '$gte', '$lt', '$lte'] as const;
export const FIELD_OPERATORS = ['$in', '$exists', ...COMPARISON_OPERATORS, '$prefix'] as const;
export const LOGICAL_OPERATORS = ['$and', '$or', '$not'] as const;

/** What the rule language means by an ISO 8601 date-time (an offset or `Z` is required). */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** The instant of an ISO 8601 date-time in ms, or null when `text` is not one. */
export function isoInstant(text: string): number | null {
  if (!ISO_DATE_TIME.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

const METADATA: ReadonlySet<string> = new Set(METADATA_KEYS);

/** A problem with a rule: the path to the bad node, one segment a step (`$or[1]`, `data.amount`, `$gt`). */
export interface FilterProblem {
  path: string[];
  message: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isScalar = (value: unknown): value is FilterScalar => value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));

function pathProblem(path: string): string | null {
  if (path === 'type') return null;
  const [root, ...rest] = path.split('.');
  if (root === 'metadata') return rest.length === 1 && METADATA.has(rest[0]!) ? null : `metadata paths are metadata.<key> with one of the seven keys: ${METADATA_KEYS.join(', ')}`;
  if (root === 'data') return rest.length > 0 && rest.every((segment) => segment !== '') ? null : 'data paths name a key: data.<key>[.<key>…]';
  return 'a key is a path (type, metadata.<key>, data.<key>…) or one of $and, $or, $not';
}

function operatorProblem(operator: string, operand: unknown): string | null {
  switch (operator) {
    case '$in':
      return Array.isArray(operand) && operand.length > 0 && operand.every(isScalar) ? null : '$in takes a non-empty list of strings, numbers, booleans or null';
    case '$exists':
      return typeof operand === 'boolean' ? null : '$exists takes true or false';
    case '$prefix':
      return typeof operand === 'string' ? null : '$prefix takes a string';
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      if (typeof operand === 'number' && Number.isFinite(operand)) return null;
      return typeof operand === 'string' && isoInstant(operand) !== null ? null : `${operator} takes a number or an ISO 8601 date-time with an offset`;
    default:
      return `unknown operator; a field takes ${FIELD_OPERATORS.join(', ')}`;
  }
}

function checkRule(rule: unknown, at: string[], depth: number, problems: FilterProblem[]): void {
  if (!isObject(rule)) return void problems.push({ path: at, message: 'a rule is a JSON object' });
  if (depth > FILTER_LIMITS.depth) return void problems.push({ path: at, message: `nested deeper than ${FILTER_LIMITS.depth} levels ($and, $or and $not add one each)` });
  for (const [key, value] of Object.entries(rule)) {
    const here = [...at, key];
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) problems.push({ path: here, message: `${key} takes a non-empty list of rules` });
      else value.forEach((inner, index) => checkRule(inner, [...at, `${key}[${index}]`], depth + 1, problems));
    } else if (key === '$not') {
      checkRule(value, here, depth + 1, problems);
    } else {
      const problem = pathProblem(key);
      if (problem) problems.push({ path: here, message: problem });
      else if (isObject(value)) {
        if (Object.keys(value).length === 0) problems.push({ path: here, message: 'an operator object needs at least one operator' });
        for (const [operator, operand] of Object.entries(value)) {
          const bad = operatorProblem(operator, operand);
          if (bad) problems.push({ path: [...here, operator], message: bad });
        }
      } else if (!isScalar(value)) {
        problems.push({ path: here, message: 'a path takes a string, number, boolean or null (equality), or an object of operators (a list: use $in)' });
      }
    }
  }
}

/** Every problem with `value` as a filter rule; none means it is a `FilterRule`. */
export function filterProblems(value: unknown): FilterProblem[] {
  // Each level takes at least 2 bytes, so a deeper rule is over the limit: said before JSON.stringify
  // overflows the stack on it (a 500 for a PUT of some 5,000 nested `$not`s).
  if (value !== null && typeof value === 'object' && !nestsAtMost(value, FILTER_LIMITS.bytes / 2)) {
    return [{ path: [], message: `more than ${FILTER_LIMITS.bytes} bytes of compact JSON (nested over ${FILTER_LIMITS.bytes / 2} deep)` }];
  }
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  if (bytes > FILTER_LIMITS.bytes) return [{ path: [], message: `${bytes} bytes of compact JSON; at most ${FILTER_LIMITS.bytes}` }];
  const problems: FilterProblem[] = [];
  checkRule(value, [], 1, problems);
  return problems;
}
