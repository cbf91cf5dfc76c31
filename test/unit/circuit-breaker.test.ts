import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Circuit, CircuitOutcome } from '../../src/actors/circuit-breaker.js';
import { CLOSED_CIRCUIT, MAX_PROBE_RETRY_AFTER_MS, admitAttempt, circuitAfter, isCountedFailure, probeAbandoned, probeNow } from '../../src/actors/circuit-breaker.js';

const SEED = 20_261_203;
const settings = { failureThreshold: 3, probeIntervalMs: 1_000 };

const answer = (statusCode: number, retryAfterMs: number | null = null): CircuitOutcome => ({ ok: statusCode >= 200 && statusCode < 300, statusCode, errorCode: statusCode < 300 ? null : 'http_status', retryAfterMs });
const noAnswer = (errorCode: string): CircuitOutcome => ({ ok: false, statusCode: null, errorCode, retryAfterMs: null });

const countedArb: fc.Arbitrary<CircuitOutcome> = fc.oneof(
  fc.integer({ min: 500, max: 599 }).map((status) => answer(status)),
  fc.option(fc.integer({ min: 0, max: 2 * MAX_PROBE_RETRY_AFTER_MS }), { nil: null }).map((retryAfterMs) => answer(429, retryAfterMs)),
  fc.constantFrom('timeout', 'connection_refused', 'connection_reset', 'dns', 'tls', 'network', 'invalid_response').map(noAnswer),
);
const successArb = fc.integer({ min: 200, max: 299 }).map((status) => answer(status));
/** Answers that show the endpoint up without a success: a 3xx, a 4xx other than 429. */
const upArb = fc.integer({ min: 300, max: 499 }).filter((status) => status !== 429).map((status) => answer(status));
const outcomeArb = fc.oneof({ weight: 4, arbitrary: countedArb }, { weight: 1, arbitrary: successArb }, { weight: 1, arbitrary: upArb }, { weight: 1, arbitrary: fc.constant(noAnswer('aborted')) });

/** Step by step: a due attempt of some delivery, or the end of one in flight, with time moving on. */
type Op = { kind: 'due'; delivery: number; advance: number } | { kind: 'end'; pick: number; outcome: CircuitOutcome; advance: number } | { kind: 'abandon'; pick: number; advance: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('due' as const), delivery: fc.integer({ min: 0, max: 30 }), advance: fc.integer({ min: 0, max: 700 }) }),
  fc.record({ kind: fc.constant('end' as const), pick: fc.nat(), outcome: outcomeArb, advance: fc.integer({ min: 0, max: 700 }) }),
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abandon' as const), pick: fc.nat(), advance: fc.integer({ min: 0, max: 700 }) }) },
);

describe('circuit breaker', () => {
  it('classifies failures: no answer, 5xx and 429 count; a success, a 3xx or another 4xx, and a cancelled attempt do not', () => {
    for (const outcome of [answer(500), answer(503), answer(599), answer(429), noAnswer('timeout'), noAnswer('connection_refused'), noAnswer('connection_reset'), noAnswer('network')]) expect(isCountedFailure(outcome)).toBe(true);
    for (const outcome of [answer(200), answer(204), answer(301), answer(400), answer(404), answer(410), noAnswer('aborted')]) expect(isCountedFailure(outcome)).toBe(false);
  });

  it('probes with the next due attempt once an operator asks for deliveries again, and changes nothing else', () => {
    const open: Circuit = { state: 'open', consecutiveFailures: 5, openedAt: 100, nextProbeAt: 5_100, probeId: null };
    expect(admitAttempt(open, 'dlv_a', 200).kind).toBe('fail_fast');
    const asked = probeNow(open, 200);
    expect(asked).toEqual({ ...open, nextProbeAt: 200 });
    expect(admitAttempt(asked, 'dlv_a', 200).kind).toBe('probe');
    const probing: Circuit = { ...open, state: 'half_open', probeId: 'dlv_b' };
    for (const circuit of [CLOSED_CIRCUIT, probing, { ...open, nextProbeAt: 150 }]) expect(probeNow(circuit, 200)).toBe(circuit);
  });

  it('opens exactly at the Nth counted failure in a row, and waits the probe interval', () => {
    let circuit: Circuit = CLOSED_CIRCUIT;
    for (let failure = 1; failure < settings.failureThreshold; failure++) {
      const after = circuitAfter(circuit, 'dlv_a', answer(503), failure, settings);
      expect(after).toEqual({ circuit: { ...CLOSED_CIRCUIT, consecutiveFailures: failure }, change: null });
      circuit = after.circuit;
    }
    expect(circuitAfter(circuit, 'dlv_a', answer(503), 10, settings)).toEqual({ circuit: { state: 'open', consecutiveFailures: 3, openedAt: 10, nextProbeAt: 1_010, probeId: null }, change: 'opened' });
  });

  it('sends one probe at or after nextProbeAt, fails the others fast, and closes on its success', () => {
    const open: Circuit = { state: 'open', consecutiveFailures: 3, openedAt: 10, nextProbeAt: 1_010, probeId: null };
    expect(admitAttempt(open, 'dlv_b', 1_009)).toEqual({ kind: 'fail_fast' });
    const probing = admitAttempt(open, 'dlv_b', 1_010);
    expect(probing).toEqual({ kind: 'probe', circuit: { ...open, state: 'half_open', probeId: 'dlv_b' } });
    const halfOpen = (probing as { circuit: Circuit }).circuit;
    expect(admitAttempt(halfOpen, 'dlv_c', 5_000)).toEqual({ kind: 'fail_fast' });
    // Another attempt, sent before the circuit opened, failing now: tallied, the probe still out.
    expect(circuitAfter(halfOpen, 'dlv_z', answer(500), 1_020, settings).circuit).toEqual({ ...halfOpen, consecutiveFailures: 4 });
    expect(circuitAfter(halfOpen, 'dlv_b', answer(204), 1_030, settings)).toEqual({ circuit: CLOSED_CIRCUIT, change: 'closed' });
  });

  it('re-opens after a failed probe until now + interval, or the Retry-After (capped at an hour) when longer', () => {
    const halfOpen: Circuit = { state: 'half_open', consecutiveFailures: 3, openedAt: 10, nextProbeAt: 1_010, probeId: 'dlv_b' };
    expect(circuitAfter(halfOpen, 'dlv_b', noAnswer('connection_refused'), 2_000, settings)).toEqual({ circuit: { ...halfOpen, state: 'open', consecutiveFailures: 4, nextProbeAt: 3_000, probeId: null }, change: null });
    expect(circuitAfter(halfOpen, 'dlv_b', answer(429, 30_000), 2_000, settings).circuit.nextProbeAt).toBe(32_000);
    expect(circuitAfter(halfOpen, 'dlv_b', answer(503, 10 * MAX_PROBE_RETRY_AFTER_MS), 2_000, settings).circuit.nextProbeAt).toBe(2_000 + MAX_PROBE_RETRY_AFTER_MS);
  });

  it('an answer showing the endpoint up (a 404) resets the count and closes, and never opens', () => {
    const two = { ...CLOSED_CIRCUIT, consecutiveFailures: 2 };
    expect(circuitAfter(two, 'dlv_a', answer(404), 1, settings)).toEqual({ circuit: CLOSED_CIRCUIT, change: null });
    const halfOpen: Circuit = { state: 'half_open', consecutiveFailures: 3, openedAt: 10, nextProbeAt: 1_010, probeId: 'dlv_b' };
    expect(circuitAfter(halfOpen, 'dlv_b', answer(400), 2_000, settings)).toEqual({ circuit: CLOSED_CIRCUIT, change: 'closed' });
  });

  it('a probe that was never sent, or cancelled, lets the next due attempt probe', () => {
    const halfOpen: Circuit = { state: 'half_open', consecutiveFailures: 3, openedAt: 10, nextProbeAt: 1_010, probeId: 'dlv_b' };
    expect(probeAbandoned(halfOpen, 'dlv_x')).toBe(halfOpen);
    expect(admitAttempt(probeAbandoned(halfOpen, 'dlv_b'), 'dlv_c', 1_500)).toMatchObject({ kind: 'probe' });
    expect(circuitAfter(halfOpen, 'dlv_b', noAnswer('aborted'), 1_500, settings).circuit).toEqual({ ...halfOpen, state: 'open', probeId: null });
  });

  it('never opens with a threshold of 0 (the breaker off)', () => {
    fc.assert(
      fc.property(fc.array(countedArb, { maxLength: 50 }), (outcomes) => {
        let circuit: Circuit = CLOSED_CIRCUIT;
        for (const [index, outcome] of outcomes.entries()) circuit = circuitAfter(circuit, `dlv_${index}`, outcome, index, { ...settings, failureThreshold: 0 }).circuit;
        expect(circuit.state).toBe('closed');
        expect(admitAttempt(circuit, 'dlv_next', 0)).toMatchObject({ kind: 'send' });
      }),
      { seed: SEED, numRuns: 100 },
    );
  });

  it('under any sequence: never two probes in flight, opens exactly at the Nth counted failure in a row, a 2xx always closes, an uncounted answer never opens, probes wait the interval and the Retry-After', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 2_000 }), fc.array(opArb, { maxLength: 120 }), (failureThreshold, probeIntervalMs, ops) => {
        const limits = { failureThreshold, probeIntervalMs };
        let circuit: Circuit = CLOSED_CIRCUIT;
        let now = 0;
        let inRow = 0;
        /** Attempts sent and not ended: the delivery, and whether it went out as the probe. */
        const inFlight: { id: string; probe: boolean }[] = [];
        for (const op of ops) {
          now += op.advance;
          if (op.kind === 'due') {
            const id = `dlv_${op.delivery}`;
            if (inFlight.some((attempt) => attempt.id === id)) continue;
            const admission = admitAttempt(circuit, id, now);
            if (admission.kind === 'fail_fast') {
              expect(circuit.state).not.toBe('closed');
              if (circuit.state === 'open') expect(now).toBeLessThan(circuit.nextProbeAt!);
              continue;
            }
            if (admission.kind === 'probe') expect(circuit.state === 'open' && now >= circuit.nextProbeAt!).toBe(true);
            circuit = admission.circuit;
            inFlight.push({ id, probe: admission.kind === 'probe' });
          } else if (inFlight.length > 0) {
            const [attempt] = inFlight.splice(op.pick % inFlight.length, 1);
            if (op.kind === 'abandon') {
              circuit = probeAbandoned(circuit, attempt!.id);
              if (attempt!.probe) expect(circuit.state).toBe('open');
              continue;
            }
            const before = circuit;
            const after = circuitAfter(circuit, attempt!.id, op.outcome, now, limits);
            circuit = after.circuit;
            if (op.outcome.errorCode === 'aborted') {
              expect(after.change).toBeNull();
              continue;
            }
            if (op.outcome.ok) expect(circuit).toEqual(CLOSED_CIRCUIT);
            if (!isCountedFailure(op.outcome)) {
              expect(circuit.state).toBe('closed');
              expect(circuit.consecutiveFailures).toBe(0);
              inRow = 0;
            } else {
              inRow += 1;
              expect(circuit.consecutiveFailures).toBe(inRow);
              // It opens from closed exactly at the threshold, never before.
              if (before.state === 'closed') expect(after.change === 'opened').toBe(inRow === failureThreshold);
              const floor = Math.max(probeIntervalMs, Math.min(op.outcome.retryAfterMs ?? 0, MAX_PROBE_RETRY_AFTER_MS));
              if (after.change === 'opened' || (before.state === 'half_open' && attempt!.probe)) {
                expect(circuit.state).toBe('open');
                expect(circuit.nextProbeAt).toBeGreaterThanOrEqual(now + probeIntervalMs);
                expect(circuit.nextProbeAt).toBeGreaterThanOrEqual(now + floor);
              }
            }
          }
          // Once closed, an earlier probe still out is an ordinary attempt.
          if (circuit.state === 'closed') for (const attempt of inFlight) attempt.probe = false;
          // A probe is in flight exactly while half_open, and never two.
          const probes = inFlight.filter((attempt) => attempt.probe);
          if (probes.length === 1) expect(circuit.probeId).toBe(probes[0]!.id);
          expect(probes.length).toBeLessThanOrEqual(1);
          expect(circuit.state === 'half_open').toBe(probes.length === 1);
          if (circuit.state === 'closed') expect(circuit.openedAt === null && circuit.nextProbeAt === null).toBe(true);
        }
      }),
      { seed: SEED + 1, numRuns: 500 },
    );
  });
});
