import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildEnvelope, eventFingerprint, firstIngestOf, isRepeatOf } from '../../src/actors/envelope.js';
import type { FirstIngest } from '../../src/actors/envelope.js';
import type { EventInput } from '../../src/transport/event-input.js';
import { reordered } from '../helpers/reordered.js';

/**
 * A repeat of an event id is told from a conflict by the first ingest's envelope and mark
 * (`firstIngestOf`), no longer by a hash of the request computed at every ingest. Whatever the
 * first request and the second: the same verdict as the hash (and the envelope) gave, which is
 * what an event stored by an earlier version is still judged by.
 */

const NOW = Date.parse('2026-03-04T05:06:07.089Z');
/** The server's timestamp for an event sent without one, as the envelope spells it and as a producer might. */
const SERVER_TIMESTAMPS = ['2026-03-04T05:06:07.089+00:00', '2026-03-04T05:06:07.089Z'];
const GIVEN_TIMESTAMPS = ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00+00:00', '2026-01-01T02:00:00+02:00', '2026-01-01T00:00:00.000Z'];

const firstRequest = fc.record(
  {
    type: fc.constantFrom('service.trigger.disabled', 'service.trigger.event'),
    data: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
    metadata: fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }),
    timestamp: fc.constantFrom(...GIVEN_TIMESTAMPS),
  },
  { requiredKeys: ['type', 'data'] },
) as fc.Arbitrary<EventInput>;

/** How the second request differs from the first: each part kept, changed or left out. */
const change = fc.record({
  seed: fc.integer(),
  timestamp: fc.constantFrom<'keep' | 'drop' | string>('keep', 'keep', 'drop', ...GIVEN_TIMESTAMPS, ...SERVER_TIMESTAMPS),
  data: fc.constantFrom('keep', 'keep', 'keep', 'add'),
  metadata: fc.constantFrom('keep', 'keep', 'drop', 'empty', 'add'),
  type: fc.constantFrom('keep', 'keep', 'keep', 'other'),
});

function secondRequest(first: EventInput, how: typeof change extends fc.Arbitrary<infer Change> ? Change : never): EventInput {
  const second = reordered(first, how.seed) as Record<string, unknown>;
  if (how.timestamp === 'drop') delete second.timestamp;
  else if (how.timestamp !== 'keep') second.timestamp = how.timestamp;
  if (how.data === 'add') second.data = { ...(second.data as object), '\u0000added': 1 };
  if (how.metadata === 'drop') delete second.metadata;
  else if (how.metadata === 'empty') second.metadata = {};
  else if (how.metadata === 'add') second.metadata = { ...(second.metadata as object), '\u0000added': 'x' };
  if (how.type === 'other') second.type = first.type === 'service.trigger.event' ? 'service.trigger.disabled' : 'service.trigger.event';
  return second as unknown as EventInput;
}

describe('telling a repeat of an event id from a conflict', () => {
  it('gives, from the envelope and the mark, the verdict the hash of the first request gave (seeded)', () => {
    const verdicts = { repeat: 0, conflict: 0 };
    fc.assert(
      fc.property(firstRequest, change, (first, how) => {
        const second = secondRequest(first, how);
        const byHash: FirstIngest = { fingerprint: eventFingerprint(first), envelope: buildEnvelope(first, 'evt_1', NOW) };
        const verdict = isRepeatOf(second, firstIngestOf(first, 'evt_1', NOW));
        expect(verdict).toBe(isRepeatOf(second, byHash));
        verdicts[verdict ? 'repeat' : 'conflict']++;
      }),
      { seed: 1124, numRuns: 2_000 },
    );
    // Both verdicts were reached often: the property compared something.
    expect(verdicts.repeat).toBeGreaterThan(200);
    expect(verdicts.conflict).toBeGreaterThan(200);
  });

  it('pins the cases that differ from a plain comparison of envelopes', () => {
    const sentWithTimestamp = { type: 'service.trigger.event', data: { b: 1, a: [1, { y: 2, x: 3 }] }, timestamp: '2026-01-01T00:00:00Z' } as EventInput;
    const sentWithout = { type: 'service.trigger.event', data: { b: 1 } } as EventInput;
    const reserialised = { type: 'service.trigger.event', data: { a: [1, { x: 3, y: 2 }], b: 1 }, timestamp: '2026-01-01T00:00:00Z' } as EventInput;
    const withTimestamp = firstIngestOf(sentWithTimestamp, 'evt_1', NOW);
    const without = firstIngestOf(sentWithout, 'evt_2', NOW);
    // Keys in another order, `Z` or `+00:00`: the same event.
    expect(isRepeatOf(reserialised, withTimestamp)).toBe(true);
    expect(isRepeatOf({ ...reserialised, timestamp: '2026-01-01T00:00:00+00:00' }, withTimestamp)).toBe(true);
    // Its timestamp left out: another request (the server would have made a new timestamp).
    expect(isRepeatOf({ type: reserialised.type, data: reserialised.data }, withTimestamp)).toBe(false);
    // Sent without one: again without one, or with the one the server made, is the same event.
    expect(isRepeatOf({ ...sentWithout }, without)).toBe(true);
    expect(isRepeatOf({ ...sentWithout, timestamp: SERVER_TIMESTAMPS[1] }, without)).toBe(true);
    expect(isRepeatOf({ ...sentWithout, timestamp: '2026-01-01T00:00:00Z' }, without)).toBe(false);
    expect(isRepeatOf({ ...sentWithout, data: { b: 2 } }, without)).toBe(false);
  });
});
