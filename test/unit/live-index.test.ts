import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LiveIndex } from '../../src/actors/live-index.js';

interface Item {
  readonly id: string;
  readonly version: number;
}

/** Ids that sort as their numbers do. */
const idOf = (n: number) => `dlv_${n.toString().padStart(6, '0')}`;

type Op =
  | { kind: 'resume'; n: number }
  | { kind: 'resumeRun'; count: number }
  | { kind: 'set'; n: number }
  | { kind: 'delete'; n: number }
  | { kind: 'deleteMany'; every: number }
  | { kind: 'sort' }
  | { kind: 'clear' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('resume' as const), n: fc.nat({ max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resumeRun' as const), count: fc.integer({ min: 1, max: 1500 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('set' as const), n: fc.nat({ max: 60 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('delete' as const), n: fc.nat({ max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteMany' as const), every: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'sort' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

describe('LiveIndex', () => {
  it('holds, finds and iterates exactly as a Map refilled in id order on sort would, whatever the order of resumes (seeded)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const index = new LiveIndex<Item>();
        const model = new Map<string, Item>();
        let version = 0;
        let highest = 60;
        for (const step of ops) {
          switch (step.kind) {
            case 'resume':
            case 'set': {
              const item = { id: idOf(step.n), version: ++version };
              const added = step.kind === 'resume' ? index.resume(item) : index.set(item.id, item);
              expect(added).toBe(!model.has(item.id));
              model.set(item.id, item);
              break;
            }
            case 'resumeRun':
              // A restart's run: ascending ids beyond every one so far.
              for (let k = 0; k < step.count; k++) {
                const item = { id: idOf(++highest), version: ++version };
                expect(index.resume(item)).toBe(true);
                model.set(item.id, item);
              }
              break;
            case 'delete':
              expect(index.delete(idOf(step.n))).toBe(model.delete(idOf(step.n)));
              break;
            case 'deleteMany':
              // Enough releases to leave more holes than live entries (the squeeze).
              for (const id of [...model.keys()].filter((_, position) => position % 5 < 5 - step.every)) {
                expect(index.delete(id)).toBe(true);
                model.delete(id);
              }
              break;
            case 'sort': {
              index.sortById();
              const sorted = [...model.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
              model.clear();
              for (const [id, item] of sorted) model.set(id, item);
              break;
            }
            case 'clear':
              index.clear();
              model.clear();
              break;
          }
          expect(index.size).toBe(model.size);
          expect([...index.values()]).toEqual([...model.values()]);
        }
        for (let n = 0; n <= highest + 1; n++) {
          expect(index.get(idOf(n))).toBe(model.get(idOf(n)));
          expect(index.get(idOf(n)) !== undefined).toBe(model.has(idOf(n)));
        }
      }),
      { seed: 2511, numRuns: 200 },
    );
  });

  it('keeps a restart in id order in its arrays: sorting it again has nothing to do', () => {
    const index = new LiveIndex<Item>();
    for (let n = 0; n < 1000; n++) index.resume({ id: idOf(n), version: n });
    index.set(idOf(500), { id: idOf(500), version: -1 });
    index.sortById();
    const values = [...index.values()];
    expect(values.map((item) => item.id)).toEqual(Array.from({ length: 1000 }, (_, n) => idOf(n)));
    expect(values[500]!.version).toBe(-1);
    // A released resumed delivery taken in again goes to the end, as re-inserting into a Map would.
    index.delete(idOf(3));
    index.set(idOf(3), { id: idOf(3), version: -2 });
    expect([...index.values()].at(-1)).toEqual({ id: idOf(3), version: -2 });
  });
});
