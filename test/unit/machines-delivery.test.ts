import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { getMicrosteps, initialTransition, transition } from 'xstate';
import type { SnapshotFrom } from 'xstate';
import {
  DELIVERY_EVENT_TYPES,
  DELIVERY_STATES,
  DELIVERY_STATUSES,
  deliveryEdges,
  deliveryMachine,
  deliveryTable,
  initialDeliveryCounters,
  isTerminalDelivery,
} from '../../src/machines/index.js';
import type { DeliveryCounters, DeliveryEvent, DeliveryStatus, DeliveryStep } from '../../src/machines/index.js';

const SEED = 20_251_122;
type Snapshot = SnapshotFrom<typeof deliveryMachine>;

const eventArb: fc.Arbitrary<DeliveryEvent> = fc.constantFrom(...DELIVERY_EVENT_TYPES).map((type) => ({ type }));
/** Any event, with or without a new round's size (which only RETRY and REDRIVE of a dead letter read). */
const eventWithRoundSizeArb: fc.Arbitrary<DeliveryEvent> = fc.record({ type: fc.constantFrom(...DELIVERY_EVENT_TYPES), roundSize: fc.integer({ min: 1, max: 50 }) }, { requiredKeys: ['type'] });
/** Biased towards the attempt loop so that long sequences reach retrying and dead_lettered. */
const lifecycleEventArb: fc.Arbitrary<DeliveryEvent> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<DeliveryEvent>({ type: 'START_ATTEMPT' }) },
  { weight: 4, arbitrary: fc.constant<DeliveryEvent>({ type: 'ATTEMPT_FAILED' }) },
  { weight: 2, arbitrary: fc.constant<DeliveryEvent>({ type: 'CIRCUIT_OPEN' }) },
  { weight: 1, arbitrary: eventArb },
);

/** Completed attempts in the round that each status allows, given maxAttempts. */
function roundRange(status: DeliveryStatus, max: number): [number, number] {
  switch (status) {
    case 'pending':
    case 'delivering':
      return [0, max - 1];
    case 'retrying':
      return [1, max - 1];
    case 'succeeded':
      return [1, max];
    case 'dead_lettered':
      return [max, max];
  }
}

/** A persisted state with counters it can really hold. */
const consistentStartArb = fc.constantFrom(...DELIVERY_STATUSES).chain((status) =>
  fc.integer({ min: status === 'retrying' ? 2 : 1, max: 6 }).chain((maxAttempts) => {
    const [low, high] = roundRange(status, maxAttempts);
    return fc
      .record({ roundAttempts: fc.integer({ min: low, max: high }), earlier: fc.integer({ min: 0, max: 30 }) })
      .map(({ roundAttempts, earlier }) => ({
        status,
        counters: { attempts: roundAttempts + earlier, roundAttempts, maxAttempts } satisfies DeliveryCounters,
      }));
  }),
);

/** Any persisted state with any counters: the table must agree with XState even off the happy path. */
const anyStartArb = fc.record({
  status: fc.constantFrom(...DELIVERY_STATUSES),
  counters: fc.record({
    attempts: fc.integer({ min: 0, max: 40 }),
    roundAttempts: fc.integer({ min: 0, max: 12 }),
    maxAttempts: fc.integer({ min: 0, max: 10 }),
  }),
});

function resolve(status: DeliveryStatus, counters: DeliveryCounters): Snapshot {
  return deliveryMachine.resolveState({ value: status, context: counters });
}

function driveBoth(status: DeliveryStatus, counters: DeliveryCounters, events: readonly DeliveryEvent[]): void {
  let snapshot = resolve(status, counters);
  let state = status;
  let context = counters;
  for (const event of events) {
    const step = deliveryTable.next(state, context, event);
    const microsteps = getMicrosteps(deliveryMachine, snapshot, event);
    const [nextSnapshot, actions] = transition(deliveryMachine, snapshot, event);
    if (step === null) {
      expect(nextSnapshot.value).toBe(state);
      expect(nextSnapshot.context).toEqual(context);
      expect(actions).toEqual([]);
    } else {
      expect(nextSnapshot.value).toBe(step.state);
      expect(nextSnapshot.context).toEqual(step.context);
      expect(actions.map((action) => action.type)).toEqual(step.actions);
      expect(microsteps.map(([microSnapshot]) => microSnapshot.value)).toEqual(step.transitions.map((hop) => hop.to));
      expect(step.transitions[0]?.from).toBe(state);
      for (const hop of step.transitions) expect(hop.event).toBe(event.type);
      state = step.state;
      context = step.context;
    }
    expect(nextSnapshot.value).not.toBe('failed');
    snapshot = nextSnapshot;
  }
}

describe('delivery machine: compiled table against XState', () => {
  it('gives the same state, context and actions after every step, from every persisted state', () => {
    fc.assert(
      fc.property(consistentStartArb, fc.array(lifecycleEventArb, { maxLength: 40 }), ({ status, counters }, events) => {
        driveBoth(status, counters, events);
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it('agrees with XState for arbitrary counters too', () => {
    fc.assert(
      fc.property(anyStartArb, fc.array(eventWithRoundSizeArb, { maxLength: 30 }), ({ status, counters }, events) => {
        driveBoth(status, counters, events);
      }),
      { seed: SEED + 1, numRuns: 400 },
    );
  });

  it('starts where XState starts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), (maxAttempts) => {
        const [snapshot, actions] = initialTransition(deliveryMachine, { maxAttempts });
        expect(snapshot.value).toBe(deliveryTable.initialState);
        expect(snapshot.context).toEqual(initialDeliveryCounters(maxAttempts));
        expect(actions).toEqual([]);
      }),
      { seed: SEED + 2, numRuns: 20 },
    );
  });
});

describe('delivery machine: invariants', () => {
  it('counts attempts per round and dead-letters after exactly maxAttempts failures in the round', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(lifecycleEventArb, { maxLength: 80 }), (maxAttempts, events) => {
        let state: DeliveryStatus = deliveryTable.initialState;
        let context = initialDeliveryCounters(maxAttempts);
        let attempts = 0;
        let failuresInRound = 0;
        for (const event of events) {
          const step = deliveryTable.next(state, context, event);
          if (step === null) continue;
          if (state === 'dead_lettered') failuresInRound = 0;
          // A due attempt under an open circuit is not sent but fails like one that was.
          const failed = event.type === 'ATTEMPT_FAILED' || event.type === 'CIRCUIT_OPEN';
          if (failed) failuresInRound += 1;
          // A 410 Gone counts as an attempt but not in the round: the endpoint went away, the delivery did not fail.
          if (failed || event.type === 'ATTEMPT_SUCCEEDED' || event.type === 'ATTEMPT_GONE') attempts += 1;

          expect(failuresInRound).toBeLessThanOrEqual(maxAttempts);
          expect(step.context.roundAttempts).toBeLessThanOrEqual(step.context.maxAttempts);
          expect(step.context.roundAttempts).toBe(failuresInRound + (step.state === 'succeeded' ? 1 : 0));
          expect(step.context.attempts).toBe(attempts);
          expect(step.context.maxAttempts).toBe(maxAttempts);
          if (step.state === 'dead_lettered' && state !== 'dead_lettered') {
            expect(failed).toBe(true);
            expect(failuresInRound).toBe(maxAttempts);
          }
          if (step.state === 'retrying' && failed) {
            expect(failuresInRound).toBeLessThan(maxAttempts);
          }
          expect(DELIVERY_STATUSES).toContain(step.state);
          state = step.state;
          context = step.context;
        }
      }),
      { seed: SEED + 3, numRuns: 500 },
    );
  });

  it('never leaves succeeded', () => {
    fc.assert(
      fc.property(consistentStartArb, eventArb, ({ counters }, event) => {
        expect(deliveryTable.next('succeeded', counters, event)).toBeNull();
        const snapshot = resolve('succeeded', counters);
        expect(snapshot.status).toBe('done');
        const [nextSnapshot, actions] = transition(deliveryMachine, snapshot, event);
        expect(nextSnapshot.value).toBe('succeeded');
        expect(actions).toEqual([]);
      }),
      { seed: SEED + 4, numRuns: 100 },
    );
    expect(deliveryTable.finalStates).toEqual(['succeeded']);
    expect(deliveryEdges.filter((edge) => edge.from === 'succeeded')).toEqual([]);
  });

  it('reaches every persisted status, never rests in failed, and every reachable status moves on or is final', () => {
    for (let maxAttempts = 1; maxAttempts <= 4; maxAttempts++) {
      const seen = new Map<string, { state: DeliveryStatus; context: DeliveryCounters }>();
      const key = (state: string, context: DeliveryCounters) => `${state}/${context.roundAttempts}/${context.attempts}`;
      const queue = [{ state: deliveryTable.initialState, context: initialDeliveryCounters(maxAttempts) }];
      while (queue.length > 0) {
        const current = queue.shift()!;
        // Rounds repeat; cap total attempts to keep the walk finite.
        if (current.context.attempts > 3 * maxAttempts || seen.has(key(current.state, current.context))) continue;
        seen.set(key(current.state, current.context), current);
        let moves = 0;
        for (const type of DELIVERY_EVENT_TYPES) {
          const step = deliveryTable.next(current.state, current.context, { type });
          if (step === null) continue;
          moves += 1;
          expect(step.state).not.toBe('failed');
          queue.push({ state: step.state, context: step.context });
        }
        if (!deliveryTable.finalStates.includes(current.state)) expect(moves).toBeGreaterThan(0);
      }
      const reached = new Set([...seen.values()].map((entry) => entry.state));
      const expected = maxAttempts === 1 ? DELIVERY_STATUSES.filter((status) => status !== 'retrying') : DELIVERY_STATUSES;
      expect([...reached].sort()).toEqual([...expected].sort());
    }
  });

  it('has failed as its only transient state, and refuses to step from it', () => {
    expect(deliveryTable.transientStates).toEqual(['failed']);
    expect(deliveryTable.states).toEqual(DELIVERY_STATES);
    expect(DELIVERY_STATES.filter((state) => state !== 'failed')).toEqual(
      [...DELIVERY_STATUSES].sort((a, b) => DELIVERY_STATES.indexOf(a) - DELIVERY_STATES.indexOf(b)),
    );
    expect(() =>
      deliveryTable.next('failed' as DeliveryStatus, initialDeliveryCounters(3), { type: 'START_ATTEMPT' }),
    ).toThrow(expect.objectContaining({ code: 'HOOKLINE_ERR_INTERNAL' }));
  });
});

describe('delivery machine: the transitions the contract names', () => {
  const counters = (roundAttempts: number, attempts = roundAttempts, maxAttempts = 3): DeliveryCounters => ({
    attempts,
    roundAttempts,
    maxAttempts,
  });

  it('fails into retrying while the round has attempts left, recording both hops', () => {
    const step = deliveryTable.next('delivering', counters(1, 4), { type: 'ATTEMPT_FAILED' });
    expect(step).toEqual({
      state: 'retrying',
      context: counters(2, 5),
      actions: ['scheduleRetry'],
      transitions: [
        { from: 'delivering', to: 'failed', event: 'ATTEMPT_FAILED' },
        { from: 'failed', to: 'retrying', event: 'ATTEMPT_FAILED' },
      ],
    });
  });

  it('dead-letters on the last failure of the round', () => {
    const step = deliveryTable.next('delivering', counters(2, 7), { type: 'ATTEMPT_FAILED' });
    expect(step).toEqual({
      state: 'dead_lettered',
      context: counters(3, 8),
      actions: ['recordDeadLetter'],
      transitions: [
        { from: 'delivering', to: 'failed', event: 'ATTEMPT_FAILED' },
        { from: 'failed', to: 'dead_lettered', event: 'ATTEMPT_FAILED' },
      ],
    });
  });

  it('counts a success and ends', () => {
    expect(deliveryTable.next('delivering', counters(2), { type: 'ATTEMPT_SUCCEEDED' })).toMatchObject({
      state: 'succeeded',
      context: counters(3),
      actions: [],
    });
  });

  it('puts an interrupted attempt back to pending without counting it', () => {
    const before = counters(1, 6);
    const step = deliveryTable.next('delivering', before, { type: 'ATTEMPT_INTERRUPTED' });
    expect(step?.state).toBe('pending');
    expect(step?.context).toBe(before);
  });

  it('retries a dead letter and redrives into a new round, keeping the total', () => {
    for (const type of ['RETRY', 'REDRIVE'] as const) {
      const step = deliveryTable.next('dead_lettered', counters(3, 9), { type });
      expect(step).toEqual({
        state: 'pending',
        context: counters(0, 9),
        actions: [],
        transitions: [{ from: 'dead_lettered', to: 'pending', event: type }],
      });
    }
  });

  it('starts the new round with the event\'s roundSize (the project\'s schedule now), the last round\'s without one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 100 }), fc.constantFrom('RETRY' as const, 'REDRIVE' as const), (last, roundSize, earlier, type) => {
        const before = { attempts: last + earlier, roundAttempts: last, maxAttempts: last };
        expect(deliveryTable.next('dead_lettered', before, { type, roundSize })?.context).toEqual({ attempts: last + earlier, roundAttempts: 0, maxAttempts: roundSize });
        expect(deliveryTable.next('dead_lettered', before, { type })?.context).toEqual({ attempts: last + earlier, roundAttempts: 0, maxAttempts: last });
        // A retry of a delivery still retrying stays in its round, whatever the schedule now.
        const retrying = { attempts: earlier + 1, roundAttempts: 1, maxAttempts: last + 1 };
        expect(deliveryTable.next('retrying', retrying, { type: 'RETRY', roundSize })?.context).toBe(retrying);
      }),
      { seed: SEED + 9, numRuns: 200 },
    );
  });

  it('makes a retrying delivery due now in the same round', () => {
    const before = counters(2, 2);
    const step = deliveryTable.next('retrying', before, { type: 'RETRY' });
    expect(step).toEqual({
      state: 'retrying',
      context: before,
      actions: ['makeDueNow'],
      transitions: [{ from: 'retrying', to: 'retrying', event: 'RETRY' }],
    });
  });

  it('refuses RETRY in pending, delivering and succeeded, and REDRIVE anywhere but dead_lettered', () => {
    for (const status of ['pending', 'delivering', 'succeeded'] as const) {
      expect(deliveryTable.next(status, counters(1), { type: 'RETRY' })).toBeNull();
    }
    for (const status of DELIVERY_STATUSES.filter((s) => s !== 'dead_lettered')) {
      expect(deliveryTable.next(status, counters(1), { type: 'REDRIVE' })).toBeNull();
    }
  });

  it('fails a due attempt under an open circuit from pending and retrying, counting it in the round', () => {
    for (const from of ['pending', 'retrying'] as const) {
      expect(deliveryTable.next(from, counters(1, 4), { type: 'CIRCUIT_OPEN' })).toEqual({
        state: 'retrying',
        context: counters(2, 5),
        actions: ['scheduleRetry'],
        transitions: [
          { from, to: 'failed', event: 'CIRCUIT_OPEN' },
          { from: 'failed', to: 'retrying', event: 'CIRCUIT_OPEN' },
        ],
      });
      expect(deliveryTable.next(from, counters(2, 8), { type: 'CIRCUIT_OPEN' })).toMatchObject({ state: 'dead_lettered', context: counters(3, 9), actions: ['recordDeadLetter'] });
    }
  });

  it('takes CIRCUIT_OPEN only where an attempt could start', () => {
    const accepting = DELIVERY_STATUSES.filter((status) => deliveryTable.next(status, counters(1), { type: 'CIRCUIT_OPEN' }) !== null);
    expect(accepting).toEqual(['pending', 'retrying']);
  });

  it('dead-letters a round of due attempts all held by an open circuit after exactly maxAttempts, as if each had failed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), (maxAttempts, held) => {
        let state: DeliveryStatus = 'pending';
        let context = initialDeliveryCounters(maxAttempts);
        for (let attempt = 0; attempt < maxAttempts; attempt++) {
          const skipped = held[attempt]!;
          const started: DeliveryStatus = skipped ? state : deliveryTable.next(state, context, { type: 'START_ATTEMPT' })!.state;
          const step: DeliveryStep = deliveryTable.next(started, context, { type: skipped ? 'CIRCUIT_OPEN' : 'ATTEMPT_FAILED' })!;
          expect(step.state).toBe(attempt === maxAttempts - 1 ? 'dead_lettered' : 'retrying');
          state = step.state;
          context = step.context;
        }
        expect(context).toEqual({ attempts: maxAttempts, roundAttempts: maxAttempts, maxAttempts });
      }),
      { seed: SEED + 5, numRuns: 200 },
    );
  });

  it('starts attempts only from pending and retrying', () => {
    const accepting = DELIVERY_STATUSES.filter(
      (status) => deliveryTable.next(status, counters(1), { type: 'START_ATTEMPT' }) !== null,
    );
    expect(accepting).toEqual(['pending', 'retrying']);
  });

  it('calls only succeeded and dead_lettered terminal', () => {
    expect(DELIVERY_STATUSES.filter(isTerminalDelivery)).toEqual(['succeeded', 'dead_lettered']);
  });
});
