import type { FilterOperators, FilterRule, FilterScalar } from './rule.js';
import { isoInstant } from './rule.js';

/** What a filter sees of an event: its envelope's `type`, `metadata` and `data`. */
export interface FilterSubject {
  type: string;
  metadata: Readonly<Record<string, unknown>>;
  data: Readonly<Record<string, unknown>>;
}

/**
 * Whether `subject` matches `rule` (a rule `filterProblems` accepted; see rule.ts for the grammar).
 * A path that leads nowhere is missing: it equals nothing, is in no `$in` list, compares with
 * nothing, and matches only `$exists: false`. Only own properties are read.
 */
export function matchesFilter(rule: FilterRule, subject: FilterSubject): boolean {
  for (const key in rule) {
    if (!Object.hasOwn(rule, key)) continue;
    const condition = rule[key];
    let holds: boolean;
    if (key === '$and') holds = (condition as FilterRule[]).every((inner) => matchesFilter(inner, subject));
    else if (key === '$or') holds = (condition as FilterRule[]).some((inner) => matchesFilter(inner, subject));
    else if (key === '$not') holds = !matchesFilter(condition as FilterRule, subject);
    else holds = fieldMatches(resolvePath(key, subject), condition as FilterScalar | FilterOperators);
    if (!holds) return false;
  }
  return true;
}

function resolvePath(path: string, subject: FilterSubject): unknown {
  if (path === 'type') return subject.type;
  const segments = path.split('.');
  let value: unknown = segments[0] === 'metadata' ? subject.metadata : subject.data;
  for (let i = 1; i < segments.length; i++) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segments[i]!)) return undefined;
    value = (value as Record<string, unknown>)[segments[i]!];
  }
  return value;
}

function fieldMatches(value: unknown, condition: FilterScalar | FilterOperators): boolean {
  if (typeof condition !== 'object' || condition === null) return value !== undefined && value === condition;
  for (const operator in condition) {
    if (!Object.hasOwn(condition, operator)) continue;
    const operand = condition[operator as keyof FilterOperators];
    let holds: boolean;
    switch (operator) {
      case '$in':
        holds = value !== undefined && (operand as FilterScalar[]).includes(value as FilterScalar);
        break;
      case '$exists':
        holds = (value !== undefined) === operand;
        break;
      case '$prefix':
        holds = typeof value === 'string' && value.startsWith(operand as string);
        break;
      default:
        holds = compares(operator, value, operand as number | string);
    }
    if (!holds) return false;
  }
  return true;
}

/** `$gt`…`$lte`: numbers with numbers, ISO date-times with ISO date-times (as instants); else false. */
function compares(operator: string, value: unknown, operand: number | string): boolean {
  let left: number | null;
  let right: number | null;
  if (typeof operand === 'number') {
    left = typeof value === 'number' ? value : null;
    right = operand;
  } else {
    left = typeof value === 'string' ? isoInstant(value) : null;
    right = isoInstant(operand);
  }
  if (left === null || right === null) return false;
  switch (operator) {
    case '$gt':
      return left > right;
    case '$gte':
      return left >= right;
    case '$lt':
      return left < right;
    default:
      return left <= right;
  }
}
