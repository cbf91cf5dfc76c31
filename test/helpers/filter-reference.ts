import fc from 'fast-check';
import { EVENT_TYPES } from '../../src/sdk/types.js';

/**
 * Issue 15's payload filters, as the tests understand them: a reference evaluator written from the
 * grammar (not from src/filter), and arbitraries of rules and envelopes that meet often.
 */

export interface Subject {
  type: string;
  metadata: Record<string, string>;
  data: Record<string, unknown>;
}

const MISSING = Symbol('missing');

function lookUp(subject: Subject, path: string): unknown {
  if (path === 'type') return subject.type;
  const [root, ...keys] = path.split('.');
  return keys.reduce<unknown>((node, key) => {
    if (node === MISSING || node === null || typeof node !== 'object') return MISSING;
    return Object.prototype.hasOwnProperty.call(node, key) ? (node as Record<string, unknown>)[key] : MISSING;
  }, root === 'metadata' ? subject.metadata : subject.data);
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;
const instant = (text: unknown) => (typeof text === 'string' && ISO.test(text) && !Number.isNaN(Date.parse(text)) ? Date.parse(text) : undefined);

function compare(op: string, value: unknown, operand: number | string): boolean {
  const pair = typeof operand === 'number' ? [typeof value === 'number' ? value : undefined, operand] : [instant(value), instant(operand)];
  const [a, b] = pair as [number | undefined, number | undefined];
  if (a === undefined || b === undefined) return false;
  return { $gt: a > b, $gte: a >= b, $lt: a < b, $lte: a <= b }[op as '$gt']!;
}

export function referenceMatches(rule: Record<string, unknown>, subject: Subject): boolean {
  return Object.entries(rule).every(([key, condition]) => {
    if (key === '$and') return (condition as Record<string, unknown>[]).every((inner) => referenceMatches(inner, subject));
    if (key === '$or') return (condition as Record<string, unknown>[]).some((inner) => referenceMatches(inner, subject));
    if (key === '$not') return !referenceMatches(condition as Record<string, unknown>, subject);
    const value = lookUp(subject, key);
    if (condition === null || typeof condition !== 'object') return value !== MISSING && value === condition;
    return Object.entries(condition).every(([op, operand]) => {
      if (op === '$exists') return operand === (value !== MISSING);
      if (op === '$in') return value !== MISSING && (operand as unknown[]).some((candidate) => candidate === value);
      if (op === '$prefix') return typeof value === 'string' && value.startsWith(operand as string);
      return compare(op, value, operand as number | string);
    });
  });
}

const STRINGS = ['acme', 'ac', 'acme-eu', '', 'beta', '2026-01-01T00:00:00+00:00', '2026-06-01T12:00:00Z', '2026-06-01T13:00:00+01:00'];
const NUMBERS = [-1, 0, 1, 2.5, 100];
const scalar = fc.oneof(fc.constantFrom(...STRINGS), fc.constantFrom(...NUMBERS), fc.boolean(), fc.constant(null));
const PATHS = ['type', 'metadata.tenant_id', 'metadata.trigger_id', 'data.amount', 'data.name', 'data.at', 'data.flag', 'data.nested.x', 'data.list.0', 'data.missing'];

const operators = fc
  .record(
    {
      $in: fc.array(fc.oneof(scalar, fc.constantFrom(...EVENT_TYPES)), { minLength: 1, maxLength: 4 }),
      $exists: fc.boolean(),
      $gt: fc.oneof(fc.constantFrom(...NUMBERS), fc.constantFrom(...STRINGS.slice(5))),
      $gte: fc.oneof(fc.constantFrom(...NUMBERS), fc.constantFrom(...STRINGS.slice(5))),
      $lt: fc.oneof(fc.constantFrom(...NUMBERS), fc.constantFrom(...STRINGS.slice(5))),
      $lte: fc.oneof(fc.constantFrom(...NUMBERS), fc.constantFrom(...STRINGS.slice(5))),
      $prefix: fc.constantFrom('a', 'ac', 'acme', 'service.', '2026-', ''),
    },
    { requiredKeys: [] },
  )
  .filter((ops) => Object.keys(ops).length > 0);

const condition = fc.oneof(scalar, fc.constantFrom(...EVENT_TYPES), operators);

/** Valid rules, at most `depth` levels deep (the grammar's limit is 8). */
export function ruleArbitrary(depth = 8): fc.Arbitrary<Record<string, unknown>> {
  const fields = fc.dictionary(fc.constantFrom(...PATHS), condition, { minKeys: 0, maxKeys: 3 });
  if (depth <= 1) return fields;
  const inner = ruleArbitrary(depth - 1);
  return fc.oneof(
    { weight: 3, arbitrary: fields },
    { weight: 1, arbitrary: fc.tuple(fields, fc.array(inner, { minLength: 1, maxLength: 3 })).map(([rule, list]) => ({ ...rule, $and: list })) },
    { weight: 1, arbitrary: fc.tuple(fields, fc.array(inner, { minLength: 1, maxLength: 3 })).map(([rule, list]) => ({ ...rule, $or: list })) },
    { weight: 1, arbitrary: fc.tuple(fields, inner).map(([rule, not]) => ({ ...rule, $not: not })) },
  );
}

const dataValue = fc.oneof(scalar, fc.constant(undefined));
export const subjectArbitrary: fc.Arbitrary<Subject> = fc.record({
  type: fc.constantFrom(...EVENT_TYPES),
  metadata: fc.dictionary(fc.constantFrom('tenant_id', 'trigger_id', 'provider_key'), fc.constantFrom(...STRINGS), { maxKeys: 3 }),
  data: fc
    .record({ amount: dataValue, name: dataValue, at: dataValue, flag: dataValue, nested: fc.oneof(fc.record({ x: scalar }), scalar), list: fc.oneof(fc.array(scalar, { maxLength: 2 }), scalar) }, { requiredKeys: [] })
    .map((data) => JSON.parse(JSON.stringify(data)) as Record<string, unknown>),
});
