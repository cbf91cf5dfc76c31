/**
 * The delivery machine: one delivery of one event to the project's endpoint.
 *
 * - `pending`: the delivery exists and is due now, but no attempt is running. It is where a
 *   delivery is born, where a held delivery waits while the configuration is paused or disabled,
 *   where an interrupted attempt returns (its outcome is unknown, so it is redone: at-least-once),
 *   and where `RETRY`/`REDRIVE` put a dead-lettered delivery to start a new round. Left by
 *   `START_ATTEMPT` when the dispatcher takes it, or by `CIRCUIT_OPEN` when its attempt comes due
 *   while the endpoint's circuit breaker is open and it is not the probe: the attempt is not sent
 *   but counted as a failed one (`failed`), so the retry schedule still decides when it
 *   dead-letters while the receiver gets only the probes.
 * - `delivering`: an HTTP attempt is in flight. Left by its outcome: `ATTEMPT_SUCCEEDED`,
 *   `ATTEMPT_FAILED` (both count the attempt), `ATTEMPT_GONE` when the endpoint answered 410 Gone
 *   (back to `pending`, held with the others while the engine disables the endpoint; counted in
 *   `attempts` but not in the round, since the endpoint went away rather than the delivery
 *   failing), or `ATTEMPT_INTERRUPTED` when the process stopped before the outcome was known (not
 *   counted; back to `pending`).
 * - `failed`: transient, never persisted. It exists so that the one decision "another attempt in
 *   this round, or give up" has a single home; it is left at once through an eventless
 *   transition: to `retrying` while the round has attempts left (`hasAttemptsLeft`), else to
 *   `dead_lettered`.
 * - `retrying`: waiting for the backoff to elapse. The machine holds no timer: `scheduleRetry`
 *   asks the engine's scheduler for a due time, and the scheduler sends `START_ATTEMPT` when it is
 *   due. A manual `RETRY` stays here and makes it due now (`makeDueNow`, same round).
 *   `CIRCUIT_OPEN` fails the due attempt without sending it, as from `pending`.
 * - `succeeded`: final. The receiver answered 2xx; nothing leaves it (replay makes a new delivery).
 * - `dead_lettered`: every attempt of the round failed. Left only by an operator: `RETRY` (one
 *   delivery) or `REDRIVE` (many), both back to `pending` with a fresh round (`startRound`) of
 *   the event's `roundSize` attempts.
 *
 * Context updates are `assign` actions whose bodies are the plain functions exported below, so
 * that the compiled transition table (transition-table.ts) runs exactly the same code. The effect
 * actions (`scheduleRetry`, `recordDeadLetter`, `makeDueNow`) are no-ops here; the engine binds
 * them with `.provide()` or runs them by name from a compiled step.
 */
import { assign, setup } from 'xstate';

/** Every state of the delivery machine, including the transient `failed`. */
export const DELIVERY_STATES = ['pending', 'delivering', 'failed', 'retrying', 'succeeded', 'dead_lettered'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** The statuses a delivery record can hold (every state but the transient `failed`). */
export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'retrying', 'dead_lettered'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const DELIVERY_EVENT_TYPES = [
  'START_ATTEMPT',
  'ATTEMPT_SUCCEEDED',
  'ATTEMPT_FAILED',
  'ATTEMPT_GONE',
  'ATTEMPT_INTERRUPTED',
  'CIRCUIT_OPEN',
  'RETRY',
  'REDRIVE',
] as const;
export type DeliveryEventType = (typeof DELIVERY_EVENT_TYPES)[number];
export type DeliveryEvent = {
  readonly type: DeliveryEventType;
  /**
   * `RETRY` or `REDRIVE` of a dead letter: attempts in its new round, the length of the retry
   * schedule the project has as the round starts (a PUT may have changed it since the last).
   * @default the last round's
   */
  readonly roundSize?: number;
};

export interface DeliveryCounters {
  /** Every completed attempt of this delivery, across all rounds. */
  readonly attempts: number;
  /** Completed attempts in the current round; a retry of a dead letter or a redrive resets it. */
  readonly roundAttempts: number;
  /** Attempts per round; the round is dead-lettered after this many failures. At least 1. */
  readonly maxAttempts: number;
}

export interface DeliveryInput {
  readonly maxAttempts: number;
}

export function initialDeliveryCounters(maxAttempts: number): DeliveryCounters {
  return { attempts: 0, roundAttempts: 0, maxAttempts };
}

export function isTerminalDelivery(status: DeliveryStatus): status is 'succeeded' | 'dead_lettered' {
  return status === 'succeeded' || status === 'dead_lettered';
}

export function hasAttemptsLeft(counters: DeliveryCounters, _event: DeliveryEvent): boolean {
  return counters.roundAttempts < counters.maxAttempts;
}

export function countAttempt(counters: DeliveryCounters, _event: DeliveryEvent): DeliveryCounters {
  return {
    attempts: counters.attempts + 1,
    roundAttempts: counters.roundAttempts + 1,
    maxAttempts: counters.maxAttempts,
  };
}

export function countAttemptOutsideRound(counters: DeliveryCounters, _event: DeliveryEvent): DeliveryCounters {
  return { attempts: counters.attempts + 1, roundAttempts: counters.roundAttempts, maxAttempts: counters.maxAttempts };
}

export function startRound(counters: DeliveryCounters, event: DeliveryEvent): DeliveryCounters {
  return { attempts: counters.attempts, roundAttempts: 0, maxAttempts: event.roundSize ?? counters.maxAttempts };
}

/** The plain functions behind the machine's named guards and `assign` actions, by name. */
export const deliveryImplementations = {
  guards: { hasAttemptsLeft },
  updaters: { countAttempt, countAttemptOutsideRound, startRound },
} as const;

export const deliveryMachine = setup({
  types: {} as {
    context: DeliveryCounters;
    events: DeliveryEvent;
    input: DeliveryInput;
  },
  guards: {
    hasAttemptsLeft: ({ context, event }) => hasAttemptsLeft(context, event),
  },
  actions: {
    countAttempt: assign(({ context, event }) => countAttempt(context, event)),
    countAttemptOutsideRound: assign(({ context, event }) => countAttemptOutsideRound(context, event)),
    startRound: assign(({ context, event }) => startRound(context, event)),
    // Effects, bound by the engine: compute the next due time (backoff, jitter, Retry-After floor).
    scheduleRetry: () => {},
    // Effects, bound by the engine: index the dead letter (and emit metrics).
    recordDeadLetter: () => {},
    // Effects, bound by the engine: move the scheduled attempt to now.
    makeDueNow: () => {},
  },
}).createMachine({
  id: 'delivery',
  initial: 'pending',
  context: ({ input }) => initialDeliveryCounters(input.maxAttempts),
  states: {
    pending: {
      on: {
        START_ATTEMPT: { target: 'delivering' },
        CIRCUIT_OPEN: { target: 'failed', actions: 'countAttempt' },
      },
    },
    delivering: {
      on: {
        ATTEMPT_SUCCEEDED: { target: 'succeeded', actions: 'countAttempt' },
        ATTEMPT_FAILED: { target: 'failed', actions: 'countAttempt' },
        ATTEMPT_GONE: { target: 'pending', actions: 'countAttemptOutsideRound' },
        ATTEMPT_INTERRUPTED: { target: 'pending' },
      },
    },
    failed: {
      always: [
        { guard: 'hasAttemptsLeft', target: 'retrying', actions: 'scheduleRetry' },
        { target: 'dead_lettered', actions: 'recordDeadLetter' },
      ],
    },
    retrying: {
      on: {
        START_ATTEMPT: { target: 'delivering' },
        CIRCUIT_OPEN: { target: 'failed', actions: 'countAttempt' },
        RETRY: { target: 'retrying', actions: 'makeDueNow' },
      },
    },
    succeeded: {
      type: 'final',
    },
    dead_lettered: {
      on: {
        RETRY: { target: 'pending', actions: 'startRound' },
        REDRIVE: { target: 'pending', actions: 'startRound' },
      },
    },
  },
});
