import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventFingerprint } from '../../src/actors/envelope.js';
import type { EventInput } from '../../src/transport/event-input.js';
import { reordered } from '../helpers/reordered.js';

const input = fc.record(
  {
    type: fc.constantFrom('service.trigger.disabled', 'service.trigger.event'),
    data: fc.dictionary(fc.string(), fc.jsonValue()),
    metadata: fc.dictionary(fc.string(), fc.string()),
    timestamp: fc.constantFrom('2026-01-01T00:00:00Z', '2026-01-01T00:00:00+02:00'),
  },
  { requiredKeys: ['type', 'data'] },
) as fc.Arbitrary<EventInput>;

describe('eventFingerprint', () => {
  it('is the SHA-256 of the canonical JSON: sorted keys at every depth, absent metadata as {}, absent timestamp as null', () => {
    const fingerprint = eventFingerprint({ type: 'service.trigger.disabled', data: { b: [{ z: 1, a: 'é' }], a: null } } as EventInput);
    const canonical = '{"data":{"a":null,"b":[{"a":"é","z":1}]},"metadata":{},"timestamp":null,"type":"service.trigger.disabled"}';
    expect(fingerprint).toBe(createHash('sha256').update(canonical).digest('base64url'));
  });

  it('does not depend on the order of keys at any depth', () => {
    fc.assert(
      fc.property(input, fc.integer(), (event, seed) => {
        expect(eventFingerprint(reordered(event, seed) as EventInput)).toBe(eventFingerprint(event));
      }),
      { numRuns: 300 },
    );
  });

  it('changes with any member added to the data', () => {
    fc.assert(
      fc.property(input, fc.string(), fc.jsonValue(), (event, key, value) => {
        fc.pre(!Object.hasOwn(event.data as object, key));
        const changed = { ...event, data: { ...(event.data as object), [key]: value } } as EventInput;
        expect(eventFingerprint(changed)).not.toBe(eventFingerprint(event));
      }),
      { numRuns: 300 },
    );
  });
});
