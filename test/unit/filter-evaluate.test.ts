import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesFilter } from '../../src/filter/evaluate.js';
import { FILTER_LIMITS, filterProblems } from '../../src/filter/rule.js';
import type { FilterRule } from '../../src/filter/rule.js';
import { referenceMatches, ruleArbitrary, subjectArbitrary } from '../helpers/filter-reference.js';

const SEED = 15_015;

const fits = (rule: unknown) => Buffer.byteLength(JSON.stringify(rule)) <= FILTER_LIMITS.bytes;

describe('payload filter evaluator', () => {
  it('decides as the reference evaluator does, on random rules and envelopes', () => {
    const outcomes = { true: 0, false: 0 };
    fc.assert(
      fc.property(ruleArbitrary().filter(fits), fc.array(subjectArbitrary, { minLength: 1, maxLength: 6 }), (rule, subjects) => {
        for (const subject of subjects) {
          const expected = referenceMatches(rule, subject);
          outcomes[String(expected) as 'true']++;
          expect(matchesFilter(rule as FilterRule, subject), JSON.stringify({ rule, subject })).toBe(expected);
        }
      }),
      { seed: SEED, numRuns: 1000 },
    );
    // Neither answer may dominate so much that the comparison says little.
    expect(outcomes.true).toBeGreaterThan(500);
    expect(outcomes.false).toBeGreaterThan(500);
  });

  it('accepts every rule of the grammar up to 8 levels and 4,096 bytes', () => {
    fc.assert(
      fc.property(ruleArbitrary(), (rule) => {
        const problems = filterProblems(rule);
        if (fits(rule)) expect(problems).toEqual([]);
        else expect(problems).toEqual([{ path: [], message: expect.stringContaining('at most 4096') }]);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('compares ISO times as instants across offsets, and never a number with a time', () => {
    const subject = { type: 'service.trigger.event', metadata: {}, data: { at: '2026-06-01T13:00:00+01:00', n: 5 } };
    expect(matchesFilter({ 'data.at': { $gte: '2026-06-01T12:00:00Z', $lte: '2026-06-01T12:00:00+00:00' } }, subject)).toBe(true);
    expect(matchesFilter({ 'data.at': { $gt: '2026-06-01T12:00:00Z' } }, subject)).toBe(false);
    expect(matchesFilter({ 'data.n': { $gt: '2026-06-01T12:00:00Z' } }, subject)).toBe(false);
    expect(matchesFilter({ 'data.at': { $gt: 0 } }, subject)).toBe(false);
  });

  it('reads only own properties: a path through the prototype is missing', () => {
    const subject = { type: 'service.trigger.event', metadata: {}, data: { name: 'x' } };
    expect(matchesFilter({ 'data.constructor': { $exists: false }, 'data.name.length': { $exists: false } }, subject)).toBe(true);
  });
});

describe('payload filter checks', () => {
  const nested = (depth: number): Record<string, unknown> => (depth === 1 ? { type: 'service.trigger.event' } : { $not: nested(depth - 1) });

  it.each<[string, unknown, string[]]>([
    ['a comparison with a string that is not a time', { $or: [{ type: 'service.trigger.event' }, { 'data.amount': { $gt: 'ten' } }] }, ['$or[1]', 'data.amount', '$gt']],
    ['an unknown operator', { 'data.amount': { $eq: 1 } }, ['data.amount', '$eq']],
    ['an unknown root', { 'payload.amount': 1 }, ['payload.amount']],
    ['a metadata key outside the seven', { 'metadata.tenantId': 'acme' }, ['metadata.tenantId']],
    ['bare data', { data: 1 }, ['data']],
    ['an empty path segment', { 'data..x': 1 }, ['data..x']],
    ['a list as a value', { 'data.tags': ['a'] }, ['data.tags']],
    ['an empty $in', { type: { $in: [] } }, ['type', '$in']],
    ['$exists with a string', { type: { $exists: 'yes' } }, ['type', '$exists']],
    ['$prefix with a number', { 'data.name': { $prefix: 1 } }, ['data.name', '$prefix']],
    ['an empty operator object', { 'data.name': {} }, ['data.name']],
    ['$and with an object', { $and: { type: 'x' } }, ['$and']],
    ['an empty $or', { $or: [] }, ['$or']],
    ['$not with a list', { $not: [{ type: 'x' }] }, ['$not']],
    ['a rule that is not an object, inside $and', { $and: [{ type: 'x' }, 'y'] }, ['$and[1]']],
    ['nine levels', nested(9), ['$not', '$not', '$not', '$not', '$not', '$not', '$not', '$not']],
  ])('refuses %s, pointing at the bad node', (_name, rule, path) => {
    expect(filterProblems(rule)).toContainEqual({ path, message: expect.any(String) });
  });

  it('takes eight levels, and {} (matches every event)', () => {
    expect(filterProblems(nested(8))).toEqual([]);
    expect(filterProblems({})).toEqual([]);
    expect(matchesFilter({}, { type: 'service.trigger.event', metadata: {}, data: {} })).toBe(true);
  });

  it('refuses more than 4,096 bytes of compact JSON', () => {
    const rule = { 'data.name': { $in: Array.from({ length: 400 }, (_, i) => `name-${i}`) } };
    expect(filterProblems(rule)).toEqual([{ path: [], message: expect.stringContaining('at most 4096') }]);
  });
});
