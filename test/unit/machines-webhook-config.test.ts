import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { getMicrosteps, initialTransition, transition } from 'xstate';
import {
  WEBHOOK_CONFIG_CONTEXT,
  WEBHOOK_CONFIG_EVENT_TYPES,
  WEBHOOK_CONFIG_STATES,
  webhookConfigEdges,
  webhookConfigMachine,
  webhookConfigTable,
} from '../../src/machines/index.js';
import type { WebhookConfigEvent, WebhookConfigState } from '../../src/machines/index.js';

const SEED = 20_251_123;

const configureActive: WebhookConfigEvent = { type: 'CONFIGURE', status: 'active' };
const configurePaused: WebhookConfigEvent = { type: 'CONFIGURE', status: 'paused' };
const disable: WebhookConfigEvent = { type: 'DISABLE' };
/** A status outside the contract: zod rejects it at the boundary, and both machines must too. */
const configureBogus = { type: 'CONFIGURE', status: 'disabled' } as unknown as WebhookConfigEvent;
const EVENTS = { 'CONFIGURE active': configureActive, 'CONFIGURE paused': configurePaused, DISABLE: disable } as const;
type EventLabel = keyof typeof EVENTS;

/** The whole contract: every allowed transition; any pair not listed is refused. */
const ALLOWED: Record<WebhookConfigState, Partial<Record<EventLabel, { to: WebhookConfigState; actions: string[] }>>> = {
  unconfigured: {
    'CONFIGURE active': { to: 'active', actions: ['updateConfig'] },
    'CONFIGURE paused': { to: 'paused', actions: ['updateConfig'] },
  },
  active: {
    'CONFIGURE active': { to: 'active', actions: ['updateConfig'] },
    'CONFIGURE paused': { to: 'paused', actions: ['updateConfig'] },
    DISABLE: { to: 'disabled', actions: ['recordDisabled'] },
  },
  paused: {
    'CONFIGURE active': { to: 'active', actions: ['updateConfig'] },
    'CONFIGURE paused': { to: 'paused', actions: ['updateConfig'] },
  },
  disabled: {
    'CONFIGURE active': { to: 'active', actions: ['updateConfig'] },
    'CONFIGURE paused': { to: 'paused', actions: ['updateConfig'] },
  },
};

const eventArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(configureActive, configurePaused, disable) },
  { weight: 1, arbitrary: fc.constant(configureBogus) },
);

describe('webhook configuration machine', () => {
  it('allows exactly the contract transitions, in the table and in XState', () => {
    for (const state of WEBHOOK_CONFIG_STATES) {
      for (const [label, event] of Object.entries(EVENTS) as [EventLabel, WebhookConfigEvent][]) {
        const expected = ALLOWED[state][label];
        const step = webhookConfigTable.next(state, WEBHOOK_CONFIG_CONTEXT, event);
        const snapshot = webhookConfigMachine.resolveState({ value: state, context: WEBHOOK_CONFIG_CONTEXT });
        const [nextSnapshot, actions] = transition(webhookConfigMachine, snapshot, event);
        if (expected === undefined) {
          expect(step, `${state} + ${label}`).toBeNull();
          expect(nextSnapshot.value).toBe(state);
          expect(actions).toEqual([]);
        } else {
          expect(step, `${state} + ${label}`).toEqual({
            state: expected.to,
            context: WEBHOOK_CONFIG_CONTEXT,
            actions: expected.actions,
            transitions: [{ from: state, to: expected.to, event: event.type }],
          });
          expect(nextSnapshot.value).toBe(expected.to);
          expect(actions.map((action) => action.type)).toEqual(expected.actions);
        }
      }
      expect(webhookConfigTable.next(state, WEBHOOK_CONFIG_CONTEXT, configureBogus)).toBeNull();
    }
  });

  it('lists exactly the contract edges for diagrams', () => {
    const listed = webhookConfigEdges.map((edge) => `${edge.from} -${edge.event}/${edge.guard ?? ''}-> ${edge.to}`);
    const expected = Object.entries(ALLOWED).flatMap(([from, byEvent]) =>
      Object.entries(byEvent).map(([label, allowed]) => {
        const [type, status] = label.split(' ');
        const guard = status === undefined ? '' : status === 'active' ? 'requestsActive' : 'requestsPaused';
        return `${from} -${type}/${guard}-> ${allowed.to}`;
      }),
    );
    expect(listed.sort()).toEqual(expected.sort());
    expect(webhookConfigTable.states).toEqual(WEBHOOK_CONFIG_STATES);
    expect(webhookConfigTable.eventTypes).toEqual(WEBHOOK_CONFIG_EVENT_TYPES);
    expect(webhookConfigTable.finalStates).toEqual([]);
    expect(webhookConfigTable.transientStates).toEqual([]);
  });

  it('starts unconfigured, as XState does', () => {
    const [snapshot, actions] = initialTransition(webhookConfigMachine);
    expect(snapshot.value).toBe('unconfigured');
    expect(webhookConfigTable.initialState).toBe('unconfigured');
    expect(snapshot.context).toEqual(WEBHOOK_CONFIG_CONTEXT);
    expect(actions).toEqual([]);
  });

  it('agrees with XState on random event sequences from every state', () => {
    fc.assert(
      fc.property(fc.constantFrom(...WEBHOOK_CONFIG_STATES), fc.array(eventArb, { maxLength: 30 }), (start, events) => {
        let snapshot = webhookConfigMachine.resolveState({ value: start, context: WEBHOOK_CONFIG_CONTEXT });
        let state: WebhookConfigState = start;
        for (const event of events) {
          const step = webhookConfigTable.next(state, WEBHOOK_CONFIG_CONTEXT, event);
          const microsteps = getMicrosteps(webhookConfigMachine, snapshot, event);
          const [nextSnapshot, actions] = transition(webhookConfigMachine, snapshot, event);
          if (step === null) {
            expect(nextSnapshot.value).toBe(state);
            expect(actions).toEqual([]);
          } else {
            expect(nextSnapshot.value).toBe(step.state);
            expect(actions.map((action) => action.type)).toEqual(step.actions);
            expect(microsteps.map(([micro]) => micro.value)).toEqual(step.transitions.map((hop) => hop.to));
            // Once configured, a webhook never goes back to unconfigured; only active is disabled.
            expect(step.state).not.toBe('unconfigured');
            if (step.state === 'disabled' && state !== 'disabled') expect(state).toBe('active');
            state = step.state;
          }
          expect(nextSnapshot.context).toEqual(WEBHOOK_CONFIG_CONTEXT);
          snapshot = nextSnapshot;
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});
