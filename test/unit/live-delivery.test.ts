import { describe, expect, it } from 'vitest';
import { liveFromHead, liveFromSchedule, toRest } from '../../src/actors/live-delivery.js';
import type { DeliveryHead } from '../../src/store/records.js';

const head = (status: DeliveryHead['status']): DeliveryHead => ({
  id: 'dlv_1',
  eventId: 'evt_1',
  eventType: 'service.trigger.event',
  createdAt: 1,
  status,
  attempts: 1,
  roundAttempts: 1,
  roundSize: 3,
  nextAttemptAt: 5,
  updatedAt: 2,
  transitionCount: 4,
  attemptCount: 1,
});

describe('toRest', () => {
  it('leaves a retrying delivery with all steps stored holding what a resumed one holds', () => {
    const delivery = liveFromHead(head('retrying'), null);
    delivery.counters = { attempts: 1, roundAttempts: 1, maxAttempts: 3 };
    toRest(delivery);
    const resumed = liveFromSchedule('dlv_1', 'retrying', [5, 1, 1, 3, 4, 1]);
    expect(delivery.identity).toBeNull();
    expect(delivery.counters).toBe(resumed.counters);
    expect(delivery).toEqual(resumed);
  });

  it('keeps what a delivery about to be attempted, or with steps to write, still needs', () => {
    const pending = liveFromHead(head('pending'), null);
    toRest(pending);
    expect(pending.identity).not.toBeNull();
    const unwritten = liveFromHead(head('retrying'), null);
    unwritten.unwritten = [{ change: {} as never, waiter: null }];
    toRest(unwritten);
    expect(unwritten.identity).not.toBeNull();
  });
});
