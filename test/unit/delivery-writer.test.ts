import { describe, expect, it } from 'vitest';
import { DeliveryWriter } from '../../src/actors/delivery-writer.js';
import { changeOf, liveFromHead, NO_STEPS, type LiveDelivery } from '../../src/actors/live-delivery.js';
import type { DeliveryStatus } from '../../src/machines/index.js';
import type { DeliveryChange } from '../../src/store/records.js';
import type { HooklineStore } from '../../src/store/store.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The writer of a cluster node's delivery steps, against a store that commits and replicates at
 * once: what reaches the changelog, and when a held attempt start is appended (its attempt is sent
 * only then).
 */

const PROJECT = 'prj_writer';

function clusterStore(replicated: DeliveryStatus[][]): HooklineStore {
  const store = {
    replicator: {},
    async applyDeliveryChanges() {},
    async replicateSteps(_projectId: string, _deliveryId: string, changes: readonly DeliveryChange[]) {
      replicated.push(changes.map((change) => change.status));
    },
    async replicateDelivery() {},
    getDelivery: () => undefined,
  };
  return store as unknown as HooklineStore;
}

function deliveryInFlight(clock: ManualClock): LiveDelivery {
  const at = clock.now();
  return liveFromHead({ id: 'dlv_writer', eventId: 'evt_writer', eventType: 'service.trigger.event', status: 'delivering', attempts: 0, roundAttempts: 0, roundSize: 5, nextAttemptAt: null, createdAt: at, updatedAt: at, transitionCount: 2, attemptCount: 0 }, null);
}

/** What `DeliveryLifecycle.apply` does to a live delivery before it starts the writer: the step in memory, queued unwritten. */
function step(delivery: LiveDelivery, status: DeliveryStatus, event: string, clock: ManualClock): Promise<void> {
  const from = delivery.status;
  delivery.status = status;
  const change = changeOf(delivery, [{ from, to: status, event, at: clock.now() }], clock.now(), undefined);
  delivery.transitionCount += 1;
  if (delivery.unwritten === NO_STEPS) delivery.unwritten = [];
  return new Promise<void>((resolve, reject) => delivery.unwritten.push({ change, waiter: { resolve, reject } }));
}

describe('DeliveryWriter in a cluster', () => {
  it('appends an attempt start made in the turn its writer finishes (another attempt\'s end started it): the attempt is sent, never left unwritten', async () => {
    const clock = new ManualClock();
    const replicated: DeliveryStatus[][] = [];
    const writer = new DeliveryWriter(PROJECT, clusterStore(replicated), clock, () => {}, { commitIssued() {}, commitSettled() {} });
    const delivery = deliveryInFlight(clock);

    // An attempt failed: its outcome is written and replicated.
    const failed = step(delivery, 'retrying', 'ATTEMPT_FAILED', clock);
    writer.start(delivery);
    // Told of that in a microtask, as an attempt's end is: the delivery's next attempt starts at
    // once, while the writer is still deciding that it has nothing left to do.
    let started: Promise<void> | null = null;
    let sent = false;
    void failed.then(() => {
      started = step(delivery, 'delivering', 'START_ATTEMPT', clock);
      writer.start(delivery);
      void started.then(() => (sent = true));
    });

    await waitFor(() => sent, { timeoutMs: 2_000, message: 'the start appended and its attempt sent' });
    expect(replicated).toEqual([['retrying'], ['delivering']]);
    expect(delivery.writing).toBe(false);
  });
});
