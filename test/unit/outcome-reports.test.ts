import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deliveryOutcome, endpointOutcome } from '../../src/actors/outcome-reports.js';
import type { FinalDelivery } from '../../src/actors/outcome-reports.js';
import { outcomeSchema } from '../../src/sdk/outcome-schema.js';
import { outcomeSubject, outcomeSubjectRoot } from '../../src/sdk/outcomes.js';

const token = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
const time = fc.integer({ min: 0, max: 4_102_444_800_000 });
const attempt = fc.record({
  attempt: fc.integer({ min: 1, max: 100 }),
  at: time,
  statusCode: fc.option(fc.integer({ min: 100, max: 599 })),
  durationMs: fc.nat(),
  error: fc.option(fc.string()),
  errorCode: fc.option(token),
  responseBody: fc.string(),
});
const finalDelivery: fc.Arbitrary<FinalDelivery> = fc.record({
  projectId: token,
  deliveryId: token,
  eventId: token,
  eventType: fc.string({ minLength: 1 }),
  createdAt: time,
  status: fc.constantFrom('succeeded' as const, 'dead_lettered' as const),
  attempts: fc.integer({ min: 1, max: 1000 }),
  attempt: fc.option(attempt, { nil: undefined }),
  at: time,
});

describe('outcome reports', () => {
  it('a delivery outcome is a valid body, and its message id differs exactly when delivery, type or attempt count differ', () => {
    fc.assert(
      fc.property(finalDelivery, finalDelivery, (a, b) => {
        const [first, second] = [deliveryOutcome(a), deliveryOutcome(b)];
        expect(outcomeSchema.parse(JSON.parse(JSON.stringify(first.outcome)))).toEqual(first.outcome);
        const sameOutcome = a.deliveryId === b.deliveryId && a.status === b.status && a.attempts === b.attempts;
        expect(first.messageId === second.messageId).toBe(sameOutcome);
      }),
      { seed: 38, numRuns: 500 },
    );
  });

  it('an endpoint change is a valid body with its time in its id; a dead letter raised as an operational event is not one', () => {
    const at = '2026-11-28T12:00:00.000Z';
    const changes = [
      endpointOutcome('hookline.endpoint.disabled', { projectId: 'p', callbackUrl: 'https://x/***', reason: 'gone', disabledAt: at }),
      endpointOutcome('hookline.endpoint.recovered', { projectId: 'p', callbackUrl: 'https://x', recoveredAt: at }),
      endpointOutcome('hookline.endpoint.circuit_opened', { projectId: 'p', callbackUrl: 'https://x', consecutiveFailures: 10, openedAt: at, nextProbeAt: at }),
      endpointOutcome('hookline.endpoint.circuit_closed', { projectId: 'p', callbackUrl: 'https://x', openedAt: '2026-11-28T11:00:00.000Z', closedAt: at }),
    ];
    expect(changes.map((change) => [change!.outcome.type, change!.outcome.status, change!.messageId])).toEqual([
      ['endpoint_disabled', 'disabled', `p.endpoint_disabled.${Date.parse(at)}`],
      ['endpoint_recovered', 'active', `p.endpoint_recovered.${Date.parse(at)}`],
      ['circuit_opened', 'open', `p.circuit_opened.${Date.parse(at)}`],
      ['circuit_closed', 'closed', `p.circuit_closed.${Date.parse(at)}`],
    ]);
    for (const change of changes) expect(outcomeSchema.parse(change!.outcome)).toEqual(change!.outcome);
    expect(endpointOutcome('hookline.delivery.dead_lettered', { projectId: 'p', deliveryId: 'd', eventId: 'e', eventType: 't', attempts: 3, deadLetteredAt: at })).toBeNull();
  });

  it('outcome subjects sit beside the events, under the prefix without its last token', () => {
    expect(outcomeSubject(outcomeSubjectRoot('hookline.events'), 'default', 'dead_lettered')).toBe('hookline.outcomes.default.dead_lettered');
    expect(outcomeSubjectRoot('acme.prod.events')).toBe('acme.prod');
    expect(outcomeSubjectRoot('events')).toBe('events');
  });
});
