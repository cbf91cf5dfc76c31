import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkHistory, type DeliveryView, type Violation } from '../../bench/nemesis/checks.js';
import { attributeViolations, compareReplicas, natsFaultOf } from '../../bench/nemesis/nats-faults.js';
import type { ProducedEvent } from '../../bench/nemesis/producers.js';
import type { Receipt } from '../../bench/nemesis/receivers.js';
import { divergences, type StoredMessage } from '../../bench/nemesis/replicas.js';

/** NATS faults in a run's report (bench/nemesis/nats-faults.ts): divergent stream replicas, and the violations they explain. */

const T0 = Date.UTC(2026, 10, 22);
const INGEST = 'HOOKLINE_EVENTS';

const copy = (msgId: string, subject = 'hookline.events.10.p'): StoredMessage => ({ subject, msgId, digest: `sha-${msgId}` });
/** A replica holding `ids[i]` at sequence `from + i`. */
const replica = (from: number, ids: readonly string[]) => new Map(ids.map((id, index) => [from + index, copy(id)]));

function natsEvent(id: string, seq: number): ProducedEvent {
  return { id, project: 'prj_a', via: 'nats', sentAt: T0, tries: 1, ackedAt: T0 + 1_000, ackedBy: null, deliveryId: null, natsSeq: seq, lastError: null };
}

function receipt(eventId: string, webhookId: string): Receipt {
  return { project: 'prj_a', webhookId, eventId, verified: true, signedAt: T0 + 2_000, receivedAt: T0 + 2_000, status: 200, answeredAt: T0 + 2_000 };
}

/** The checks' violations on a history: each event received under `dlv_<id>` unless listed as lost. */
function violationsOf(events: ProducedEvent[], lost: readonly string[], extra: DeliveryView[] = []): Violation[] {
  const delivered = events.filter((event) => !lost.includes(event.id));
  const deliveries = new Map([...delivered.map((event): DeliveryView => ({ id: `dlv_${event.id}`, project: 'prj_a', eventId: event.id, status: 'succeeded', attempts: 1, nextAttemptAt: null })), ...extra].map((each) => [each.id, each]));
  return checkHistory({
    events,
    receipts: delivered.map((event) => receipt(event.id, `dlv_${event.id}`)),
    views: [{ nodeId: 'node-1', deliveries, error: null }],
    faults: [],
    startedAt: T0,
    checkedAt: T0 + 60_000,
    window: { beforeMs: 6_000, afterMs: 11_000 },
    overdueMs: 10_000,
    senderTimeoutMs: 5_000,
    settled: true,
    otherViolations: [],
  }).violations;
}

describe('NATS faults', () => {
  // Finding 3: n1 kept evt_146 at 147, which the quorum gave to evt_195; n1's consumer replica handed out evt_146 under 147.
  const quorum = replica(146, ['evt_145', 'evt_195', 'evt_200', 'evt_201']);
  const stale = replica(146, ['evt_145', 'evt_146', 'evt_195', 'evt_200']);
  const finding3 = divergences({ n1: stale, n2: quorum, n3: quorum });

  it('puts an event acknowledged at a sequence where the ingest replicas diverge down to NATS, with what each replica holds there', () => {
    const events = [natsEvent('evt_145', 146), natsEvent('evt_195', 147), natsEvent('evt_146', 354)];
    const violations = violationsOf(events, ['evt_195']);
    expect(violations.map((violation) => violation.check).sort()).toEqual(['acked-delivery-unknown', 'acked-lost']);

    const { hookline, attributed } = attributeViolations(violations, events, INGEST, finding3);
    expect(hookline).toEqual([]);
    expect(attributed.map(({ violation, seq }) => [violation.check, violation.eventId, seq])).toEqual([
      ['acked-lost', 'evt_195', 147],
      ['acked-delivery-unknown', 'evt_195', 147],
    ]);
    expect(attributed[0]!.copies).toEqual({ n1: copy('evt_146'), n2: copy('evt_195'), n3: copy('evt_195') });
    expect(natsFaultOf(INGEST, finding3)).toMatchObject({ stream: INGEST, servers: ['n1'], fromSeq: 147, toSeq: 149, sequences: 3 });
  });

  it('keeps a lost event Hookline\'s when the replicas agree at its sequence, though they diverge elsewhere', () => {
    const events = [natsEvent('evt_145', 146), natsEvent('evt_195', 147)];
    const violations = violationsOf(events, ['evt_145']);
    const { hookline, attributed } = attributeViolations(violations, events, INGEST, finding3);
    expect(attributed).toEqual([]);
    expect(hookline).toEqual(violations);
    expect(hookline.map((violation) => violation.eventId)).toEqual(['evt_145', 'evt_145']);
  });

  it('keeps an HTTP event, and any other check on a diverged event, Hookline\'s', () => {
    const http: ProducedEvent = { ...natsEvent('evt_http_1', 147), via: 'http', natsSeq: null, ackedBy: 'node-1', deliveryId: 'dlv_x' };
    const events = [http, natsEvent('evt_195', 147)];
    const stuck: DeliveryView = { id: 'dlv_stuck', project: 'prj_a', eventId: 'evt_195', status: 'delivering', attempts: 0, nextAttemptAt: null };
    const violations = violationsOf(events, ['evt_http_1'], [stuck]);
    const { hookline, attributed } = attributeViolations(violations, events, INGEST, finding3);
    expect(attributed).toEqual([]);
    expect(hookline.map((violation) => `${violation.check} ${violation.eventId}`).sort()).toEqual(['acked-delivery-unknown evt_http_1', 'acked-lost evt_http_1', 'not-final evt_195']);
  });

  it('attributes exactly the acked-lost and acked-delivery-unknown violations at a sequence whose replicas hold different copies (property)', () => {
    const server = fc.array(fc.constantFrom('a', 'b', 'c', null), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(fc.tuple(server, server, server), fc.array(fc.tuple(fc.integer({ min: 1, max: 14 }), fc.constantFrom('acked-lost', 'acked-delivery-unknown', 'not-final', 'nodes-disagree') as fc.Arbitrary<Violation['check']>, fc.boolean()), { maxLength: 12 }), (held, made) => {
        const replicas = Object.fromEntries(held.map((ids, index) => [`n${index + 1}`, new Map(ids.flatMap((id, at) => (id === null ? [] : [[at + 1, copy(id)] as const])))]));
        const events = made.map(([seq, , viaNats], index) => ({ ...natsEvent(`evt_${index}`, seq), ...(viaNats ? {} : { via: 'http' as const, natsSeq: null }) }));
        const violations = made.map(([, check], index): Violation => ({ check, message: '', eventId: `evt_${index}` }));
        const { hookline, attributed } = attributeViolations(violations, events, INGEST, divergences(replicas));
        expect(hookline.length + attributed.length).toBe(violations.length);
        const lastHeldByAll = Math.min(...held.map((ids) => ids.reduce((last, id, at) => (id === null ? last : at + 1), 0)));
        for (const [index, violation] of violations.entries()) {
          const event = events[index]!;
          const seq = event.natsSeq;
          const differ = seq !== null && seq <= lastHeldByAll && new Set(held.map((ids) => ids[seq - 1] ?? null)).size > 1;
          const expected = differ && (violation.check === 'acked-lost' || violation.check === 'acked-delivery-unknown');
          expect(attributed.some((each) => each.violation === violation && each.seq === seq)).toBe(expected);
          expect(hookline.includes(violation)).toBe(!expected);
        }
      }),
      { seed: 36 },
    );
  });

  it('compares each stream: a hole is a divergence of the ingest stream, not of one that purges; an unreadable one is named', () => {
    const holed = { n1: replica(1, ['e1', 'e2', 'e3']), n2: new Map([[1, copy('e1')], [3, copy('e3')]]), n3: replica(1, ['e1', 'e2', 'e3']) };
    const found = compareReplicas(
      [
        { name: INGEST, missingIsDeleted: false },
        { name: `${INGEST}_CHANGELOG`, missingIsDeleted: true },
        { name: 'GONE', missingIsDeleted: false },
      ],
      (stream) => {
        if (stream === 'GONE') throw new Error('no store');
        return holed;
      },
    );
    expect(found.faults).toEqual([{ stream: INGEST, servers: ['n2'], fromSeq: 2, toSeq: 2, sequences: 1, first: [{ seq: 2, copies: { n1: copy('e2'), n2: null, n3: copy('e2') } }] }]);
    expect(found.divergent.get(`${INGEST}_CHANGELOG`)).toEqual([]);
    expect(found.compared.map((each) => each.stream)).toEqual([INGEST, `${INGEST}_CHANGELOG`]);
    expect(found.compared[0]!.replicas.n2).toEqual({ messages: 2, lastSeq: 3 });
    expect(found.errors).toEqual(['GONE: no store']);
    // Two different copies are a divergence even of a stream that purges.
    const conflicting = compareReplicas([{ name: 'C', missingIsDeleted: true }], () => ({ n1: replica(1, ['e1']), n2: replica(1, ['x1']), n3: replica(1, ['e1']) }));
    expect(conflicting.faults.map((fault) => [fault.servers, fault.fromSeq])).toEqual([[['n2'], 1]]);
  });
});
