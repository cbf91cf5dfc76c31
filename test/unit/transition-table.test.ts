import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assign, getMicrosteps, initialTransition, setup, transition } from 'xstate';
import type { AnyStateMachine } from 'xstate';
import {
  DELIVERY_EVENT_TYPES,
  DELIVERY_STATES,
  compileMachine,
  deliveryEdges,
  deliveryTable,
  initialDeliveryCounters,
} from '../../src/machines/index.js';
import type { MachineImplementations } from '../../src/machines/index.js';

const SEED = 20_251_124;

// A synthetic machine exercising what the delivery machine does not: two transient states in a
// row (the second guard reads context assigned by the first hop), several actions per transition,
// a targetless transition, and a guard on the event.
interface Tally {
  readonly n: number;
}
type TallyEvent = { readonly type: 'ADD'; readonly by: number } | { readonly type: 'RESET' };
type TallyState = 'idle' | 'checking' | 'grading' | 'big' | 'done';

const tallyImplementations = {
  guards: {
    isBig: (context: Tally, _event: TallyEvent) => context.n >= 10,
    isHuge: (context: Tally, _event: TallyEvent) => context.n >= 50,
    addsUp: (_context: Tally, event: TallyEvent) => event.type === 'ADD' && event.by > 0,
  },
  updaters: {
    add: (context: Tally, event: TallyEvent): Tally => ({ n: context.n + (event.type === 'ADD' ? event.by : 0) }),
    double: (context: Tally, _event: TallyEvent): Tally => ({ n: context.n * 2 }),
    reset: (_context: Tally, _event: TallyEvent): Tally => ({ n: 0 }),
  },
} satisfies MachineImplementations<Tally, TallyEvent>;

const { guards: g, updaters: u } = tallyImplementations;
const tallyMachine = setup({
  types: {} as { context: Tally; events: TallyEvent },
  guards: {
    isBig: ({ context, event }) => g.isBig(context, event),
    isHuge: ({ context, event }) => g.isHuge(context, event),
    addsUp: ({ context, event }) => g.addsUp(context, event),
  },
  actions: {
    add: assign(({ context, event }) => u.add(context, event)),
    double: assign(({ context, event }) => u.double(context, event)),
    reset: assign(({ context, event }) => u.reset(context, event)),
    note: () => {},
    alarm: () => {},
  },
}).createMachine({
  id: 'tally',
  initial: 'idle',
  context: { n: 0 },
  states: {
    idle: {
      on: {
        ADD: { target: 'checking', actions: ['note', 'add', 'alarm'] },
        RESET: { actions: ['reset', 'note'] },
      },
    },
    checking: {
      always: [{ guard: 'isBig', target: 'grading', actions: ['double', 'alarm'] }, { target: 'idle' }],
    },
    grading: {
      always: [{ guard: 'isHuge', target: 'done', actions: 'note' }, { target: 'big' }],
    },
    big: {
      on: {
        ADD: [{ guard: 'addsUp', target: 'checking', actions: 'add' }],
        RESET: { target: 'idle', actions: 'reset' },
      },
    },
    done: { type: 'final' },
  },
});

const tallyTable = compileMachine<TallyState, Tally, TallyEvent, 'idle' | 'big' | 'done'>(
  tallyMachine,
  tallyImplementations,
);

describe('compileMachine: behaviour', () => {
  it('agrees with XState on a machine with chained transient states', () => {
    const eventArb: fc.Arbitrary<TallyEvent> = fc.oneof(
      { weight: 5, arbitrary: fc.integer({ min: -6, max: 12 }).map((by) => ({ type: 'ADD' as const, by })) },
      { weight: 1, arbitrary: fc.constant({ type: 'RESET' as const }) },
    );
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 30 }), (events) => {
        let [snapshot] = initialTransition(tallyMachine);
        let state = tallyTable.initialState;
        let context: Tally = { n: 0 };
        for (const event of events) {
          const step = tallyTable.next(state, context, event);
          const microsteps = getMicrosteps(tallyMachine, snapshot, event);
          const [nextSnapshot, actions] = transition(tallyMachine, snapshot, event);
          if (step === null) {
            expect(nextSnapshot.value).toBe(state);
            expect(nextSnapshot.context).toEqual(context);
          } else {
            expect(nextSnapshot.value).toBe(step.state);
            expect(nextSnapshot.context).toEqual(step.context);
            expect(actions.map((action) => action.type)).toEqual(step.actions);
            expect(microsteps.map(([micro]) => micro.value)).toEqual(step.transitions.map((hop) => hop.to));
            expect(tallyTable.transientStates).not.toContain(step.state);
            state = step.state;
            context = step.context;
          }
          snapshot = nextSnapshot;
        }
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it('runs updaters before the next hop guards, and lists effects in order with every hop', () => {
    expect(tallyTable.next('idle', { n: 20 }, { type: 'ADD', by: 6 })).toEqual({
      state: 'done',
      context: { n: 52 },
      actions: ['note', 'alarm', 'alarm', 'note'],
      transitions: [
        { from: 'idle', to: 'checking', event: 'ADD' },
        { from: 'checking', to: 'grading', event: 'ADD' },
        { from: 'grading', to: 'done', event: 'ADD' },
      ],
    });
  });

  it('records a targetless transition as a hop to the same state', () => {
    expect(tallyTable.next('idle', { n: 3 }, { type: 'RESET' })).toEqual({
      state: 'idle',
      context: { n: 0 },
      actions: ['note'],
      transitions: [{ from: 'idle', to: 'idle', event: 'RESET' }],
    });
  });

  it('returns null when no guard passes', () => {
    expect(tallyTable.next('big', { n: 12 }, { type: 'ADD', by: -1 })).toBeNull();
    expect(tallyTable.next('done', { n: 60 }, { type: 'RESET' })).toBeNull();
  });

  it('shares frozen result arrays between steps on the same path and keeps context identity', () => {
    const context = initialDeliveryCounters(3);
    const first = deliveryTable.next('pending', context, { type: 'START_ATTEMPT' });
    const second = deliveryTable.next('pending', context, { type: 'START_ATTEMPT' });
    expect(first?.context).toBe(context);
    expect(first?.transitions).toBe(second?.transitions);
    expect(first?.actions).toBe(second?.actions);
    expect(Object.isFrozen(first?.transitions)).toBe(true);
    expect(Object.isFrozen(first?.transitions[0])).toBe(true);
    expect(Object.isFrozen(first?.actions)).toBe(true);
  });

  it('throws a coded error for a state the machine does not have', () => {
    expect(() => deliveryTable.next('lost' as 'pending', initialDeliveryCounters(1), { type: 'RETRY' })).toThrow(
      expect.objectContaining({ code: 'HOOKLINE_ERR_INTERNAL' }),
    );
  });
});

describe('compileMachine: metadata for diagrams', () => {
  it('lists states, final states, event types and edges of the delivery machine', () => {
    expect(deliveryTable.id).toBe('delivery');
    expect(deliveryTable.states).toEqual(DELIVERY_STATES);
    expect(deliveryTable.finalStates).toEqual(['succeeded']);
    expect([...deliveryTable.eventTypes].sort()).toEqual([...DELIVERY_EVENT_TYPES].sort());
    expect(deliveryEdges).toEqual([
      { from: 'pending', to: 'delivering', event: 'START_ATTEMPT', actions: [] },
      { from: 'pending', to: 'failed', event: 'CIRCUIT_OPEN', actions: ['countAttempt'] },
      { from: 'delivering', to: 'succeeded', event: 'ATTEMPT_SUCCEEDED', actions: ['countAttempt'] },
      { from: 'delivering', to: 'failed', event: 'ATTEMPT_FAILED', actions: ['countAttempt'] },
      { from: 'delivering', to: 'pending', event: 'ATTEMPT_GONE', actions: ['countAttemptOutsideRound'] },
      { from: 'delivering', to: 'pending', event: 'ATTEMPT_INTERRUPTED', actions: [] },
      { from: 'failed', to: 'retrying', event: null, guard: 'hasAttemptsLeft', actions: ['scheduleRetry'] },
      { from: 'failed', to: 'dead_lettered', event: null, actions: ['recordDeadLetter'] },
      { from: 'retrying', to: 'delivering', event: 'START_ATTEMPT', actions: [] },
      { from: 'retrying', to: 'failed', event: 'CIRCUIT_OPEN', actions: ['countAttempt'] },
      { from: 'retrying', to: 'retrying', event: 'RETRY', actions: ['makeDueNow'] },
      { from: 'dead_lettered', to: 'pending', event: 'RETRY', actions: ['startRound'] },
      { from: 'dead_lettered', to: 'pending', event: 'REDRIVE', actions: ['startRound'] },
    ]);
  });

  it('lists the synthetic machine with its eventless edges', () => {
    expect(tallyTable.states).toEqual(['idle', 'checking', 'grading', 'big', 'done']);
    expect(tallyTable.transientStates).toEqual(['checking', 'grading']);
    expect(tallyTable.finalStates).toEqual(['done']);
    expect(tallyTable.eventTypes).toEqual(['ADD', 'RESET']);
    expect(tallyTable.edges.filter((edge) => edge.event === null).map((edge) => `${edge.from}->${edge.to}`)).toEqual([
      'checking->grading',
      'checking->idle',
      'grading->done',
      'grading->big',
    ]);
  });
});

describe('compileMachine: refuses what it would run differently from XState', () => {
  const noop = () => {};
  const plain = { guards: { ok: () => true }, updaters: {} };
  const machineWith = (states: Record<string, object>, extra: object = {}): AnyStateMachine =>
    setup({
      guards: { ok: () => true, missing: () => true, withParams: (_: unknown, _params: { x: number }) => true },
      actions: { noop, bump: assign({}) },
    }).createMachine({ initial: 'a', ...extra, states } as never) as unknown as AnyStateMachine;

  const refusals: Array<{
    feature: string;
    reason: string;
    machine: () => AnyStateMachine;
    implementations?: MachineImplementations<unknown, unknown>;
  }> = [
    {
      feature: 'nested states',
      reason: 'only atomic and final states',
      machine: () => machineWith({ a: { initial: 'b', states: { b: {} } } }),
    },
    { feature: 'entry actions', reason: 'entry and exit actions', machine: () => machineWith({ a: { entry: 'noop' } }) },
    {
      feature: 'delayed transitions',
      reason: 'delayed transitions',
      machine: () => machineWith({ a: { after: { 100: 'b' } }, b: {} }),
    },
    {
      feature: 'inline guards',
      reason: 'guards must be named',
      machine: () => machineWith({ a: { on: { GO: { guard: () => true, target: 'b' } } }, b: {} }),
    },
    {
      feature: 'guards with params',
      reason: 'guards must be named',
      machine: () => machineWith({ a: { on: { GO: { guard: { type: 'withParams', params: { x: 1 } }, target: 'b' } } }, b: {} }),
    },
    {
      feature: 'a guard without a plain function',
      reason: "no plain function for guard 'missing'",
      machine: () => machineWith({ a: { on: { GO: { guard: 'missing', target: 'b' } } }, b: {} }),
    },
    {
      feature: 'inline actions',
      reason: 'actions must be named',
      machine: () => machineWith({ a: { on: { GO: { actions: () => {} } } } }),
    },
    {
      feature: 'an assign without an updater',
      reason: "'bump' is an assign without an updater",
      machine: () => machineWith({ a: { on: { GO: { actions: 'bump' } } } }),
    },
    {
      feature: 'an updater for an effect action',
      reason: "'noop' is an effect but has an updater",
      machine: () => machineWith({ a: { on: { GO: { actions: 'noop' } } } }),
      implementations: { guards: {}, updaters: { noop: (context: unknown) => context } },
    },
    {
      feature: 'a transient state that can rest',
      reason: 'must end with an unguarded eventless transition',
      machine: () => machineWith({ a: { on: { GO: 'b' } }, b: { always: { guard: 'ok', target: 'a' } } }),
    },
    {
      feature: 'eventless loops',
      reason: 'eventless transitions loop',
      machine: () => machineWith({ a: { on: { GO: 'b' } }, b: { always: 'c' }, c: { always: 'b' } }),
    },
    { feature: 'wildcard events', reason: 'wildcard events', machine: () => machineWith({ a: { on: { '*': 'b' } }, b: {} }) },
    {
      feature: 'root-level transitions',
      reason: 'root-level transitions',
      machine: () => machineWith({ a: {}, b: {} }, { on: { GO: '.b' } }),
    },
  ];

  for (const { feature, reason, machine, implementations } of refusals) {
    it(`refuses ${feature}`, () => {
      expect(() => compileMachine(machine(), implementations ?? plain)).toThrow(
        expect.objectContaining({ code: 'HOOKLINE_ERR_INTERNAL', message: expect.stringContaining(reason) }),
      );
    });
  }

  it('accepts the same skeleton without the refused feature', () => {
    const table = compileMachine(machineWith({ a: { on: { GO: { guard: 'ok', target: 'b', actions: 'noop' } } }, b: {} }), plain);
    expect(table.next('a', {}, { type: 'GO' })).toMatchObject({ state: 'b', actions: ['noop'] });
  });
});
