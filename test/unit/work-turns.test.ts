import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LOOP_SLICE_MS, MAX_COMMITS_BEHIND, MIN_LOOP_SLICE_MS, TURN_SLICE_MS, WorkTurns } from '../../src/actors/work-turns.js';

/** A WorkTurns on a manual clock whose event loop is run by hand, one loop at a time. */
function manual() {
  let now = 1_000;
  const loops: Array<() => void> = [];
  const errors: unknown[] = [];
  const turns = new WorkTurns(
    (error) => errors.push(error),
    () => now,
    (run) => loops.push(run),
  );
  return {
    turns,
    errors,
    advance: (ms: number) => (now += ms),
    now: () => now,
    /** Runs the loop's deferred work once; false when none was scheduled. */
    loop: () => {
      const run = loops.shift();
      run?.();
      return run !== undefined;
    },
    scheduled: () => loops.length,
  };
}

describe('WorkTurns', () => {
  it('runs each turn once, in the order asked, and a turn asked again goes behind the others (round-robin)', () => {
    const m = manual();
    const ran: string[] = [];
    const owner = (name: string, times: number) => {
      let left = times;
      const turn = () => {
        ran.push(name);
        if (--left > 0) m.turns.request(turn);
      };
      m.turns.request(turn);
    };
    owner('a', 4);
    owner('b', 2);
    owner('c', 1);
    while (m.loop());
    expect(ran).toEqual(['a', 'b', 'c', 'a', 'b', 'a', 'a']);
    expect(m.turns.pending).toBe(0);
  });

  it('is not spent outside a turn, and a turn is spent after its slice', () => {
    const m = manual();
    expect(m.turns.spent()).toBe(false);
    m.advance(1_000);
    const seen: boolean[] = [];
    m.turns.request(() => {
      seen.push(m.turns.spent());
      m.advance(TURN_SLICE_MS);
      seen.push(m.turns.spent());
    });
    m.loop();
    expect(seen).toEqual([false, true]);
    expect(m.turns.spent()).toBe(false);
  });

  it('gives the turns of one loop at most LOOP_SLICE_MS, and the rest go first in the next loop', () => {
    const m = manual();
    const ran: number[] = [];
    for (let i = 0; i < 10; i++) m.turns.request(() => (ran.push(i), m.advance(1)));
    m.loop();
    // The first run follows a long idle: the whole loop slice.
    expect(ran).toEqual([0, 1, 2, 3, 4, 5]);
    m.turns.request(() => ran.push(99));
    while (m.loop());
    expect(ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 99]);
  });

  it('yields to other work: after little of it, a loop runs MIN_LOOP_SLICE_MS of turns; after more, a third of it', () => {
    const m = manual();
    let ran = 0;
    const busy = () => {
      ran++;
      m.advance(0.5);
      m.turns.request(busy);
    };
    // Twenty projects with work: a turn asked again waits for the next loop.
    for (let i = 0; i < 20; i++) m.turns.request(busy);
    m.loop();
    ran = 0;
    m.loop(); // right after the last run: no other work in between
    expect(ran).toBe(MIN_LOOP_SLICE_MS / 0.5);
    ran = 0;
    m.advance(9); // other work (requests) took 9 ms
    m.loop();
    expect(ran).toBe(3 / 0.5);
  });

  it('holds every turn while MAX_COMMITS_BEHIND delivery commits are unsettled, until half have settled', () => {
    const m = manual();
    let ran = 0;
    for (let i = 0; i < MAX_COMMITS_BEHIND; i++) m.turns.commitIssued();
    m.turns.request(() => ran++);
    m.loop();
    expect(ran).toBe(0);
    m.turns.request(() => ran++);
    expect(m.scheduled()).toBe(0);
    for (let i = 0; i < MAX_COMMITS_BEHIND / 2 - 1; i++) m.turns.commitSettled();
    expect(m.scheduled()).toBe(0);
    m.turns.commitSettled();
    expect(m.scheduled()).toBe(1);
    m.loop();
    expect(ran).toBe(2);
  });

  it('tells a running turn it is spent once the disk is behind', () => {
    const m = manual();
    const seen: boolean[] = [];
    m.turns.request(() => {
      seen.push(m.turns.spent());
      for (let i = 0; i < MAX_COMMITS_BEHIND; i++) m.turns.commitIssued();
      seen.push(m.turns.spent());
    });
    m.loop();
    expect(seen).toEqual([false, true]);
  });

  it('reports a turn that throws and runs the others', () => {
    const m = manual();
    const ran: string[] = [];
    m.turns.request(() => {
      throw new Error('boom');
    });
    m.turns.request(() => ran.push('next'));
    while (m.loop());
    expect(ran).toEqual(['next']);
    expect(String(m.errors[0])).toContain('boom');
  });

  it('property: any mix of turn lengths and re-requests runs every turn once, owners in rotation, each loop within its slice plus one turn', () => {
    const plan = fc.array(fc.record({ costs: fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 6 }) }), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(plan, fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 30 }), (owners, gaps) => {
        const m = manual();
        const ran: number[] = [];
        owners.forEach(({ costs }, owner) => {
          let next = 0;
          const turn = () => {
            ran.push(owner);
            m.advance(costs[next]!);
            if (++next < costs.length) m.turns.request(turn);
          };
          m.turns.request(turn);
        });
        let loops = 0;
        for (;;) {
          m.advance(gaps[loops % Math.max(1, gaps.length)] ?? 0);
          const startedAt = m.now();
          if (!m.loop()) break;
          loops++;
          // Within the loop's slice, overrun by at most the one turn that crossed it (8 ms at most here).
          expect(m.now() - startedAt).toBeLessThanOrEqual(LOOP_SLICE_MS + 8);
        }
        // Every owner's turns ran, as many as it asked for.
        owners.forEach(({ costs }, owner) => expect(ran.filter((o) => o === owner).length).toBe(costs.length));
        // Rotation: between two turns of one owner, every other owner still wanting turns had one.
        for (let i = 0; i < ran.length; i++) {
          const nextSame = ran.indexOf(ran[i]!, i + 1);
          if (nextSame < 0) continue;
          const between = new Set(ran.slice(i + 1, nextSame));
          owners.forEach(({ costs }, owner) => {
            if (owner === ran[i]) return;
            const doneBefore = ran.slice(0, i + 1).filter((o) => o === owner).length;
            if (doneBefore < costs.length && ran.slice(0, i + 1).includes(owner)) expect(between.has(owner)).toBe(true);
          });
        }
        expect(loops).toBeLessThanOrEqual(ran.length);
      }),
      { seed: 35, numRuns: 300 },
    );
    expect(LOOP_SLICE_MS).toBeGreaterThan(MIN_LOOP_SLICE_MS);
  });
});
