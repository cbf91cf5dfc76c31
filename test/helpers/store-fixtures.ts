import { onTestFinished } from 'vitest';
import type { DeliveryRecord } from '../../src/store/records.js';
import { HooklineStore } from '../../src/store/store.js';
import { makeTempDir } from './temp-dir.js';

/** A store on a fresh directory of its own, closed and removed when the calling test ends. */
export function openTempStore(): HooklineStore {
  const dir = makeTempDir();
  const store = new HooklineStore({ path: dir.path });
  onTestFinished(async () => {
    await store.close();
    dir.remove();
  });
  return store;
}

/** A delivery record whose size is its `transitions` count (for tests where only newer-or-older matters). */
export function deliveryWithTransitions(id: string, transitions: number, status: DeliveryRecord['status'], attempts = transitions): DeliveryRecord {
  return {
    id,
    eventId: `evt_${id}`,
    eventType: 'service.trigger.event',
    status,
    attempts,
    roundAttempts: attempts,
    roundSize: 5,
    nextAttemptAt: null,
    createdAt: 1,
    updatedAt: transitions,
    attemptLog: [],
    transitions: Array.from({ length: transitions }, (_, i) => ({ from: null, to: 'pending' as const, event: 'CREATED' as const, at: i })),
  };
}
