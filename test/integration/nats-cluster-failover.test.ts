import { afterEach, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Settings } from '../../src/config/settings.js';
import { configureReceiver, startTestHookline, type TestHookline } from '../helpers/hookline.js';
import { natsSettings, startContinuousPublisher, uniqueNatsNames } from '../helpers/nats.js';
import { startNatsCluster, type TestNatsCluster } from '../helpers/nats-cluster.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A JetStream leader change under load: Hookline (one node, HOOKLINE_NATS_REPLICAS=3, all three
 * seeds, TLS and a password) consumes a steady stream of events while the NATS server leading the
 * events stream is killed with -9 and later brought back on its store. Every event JetStream acked
 * to the publisher is delivered; repeats are at-least-once redeliveries of one delivery (the same
 * webhook-id), counted, never a second delivery of an event; and Hookline answers throughout.
 */

let cluster: TestNatsCluster | null = null;
let publisher: NatsConnection | null = null;
let hookline: TestHookline | null = null;

afterEach(async () => {
  await hookline?.close();
  await publisher?.close();
  await cluster?.dispose();
  cluster = publisher = hookline = null;
});

/** Every delivery request of each event id. */
function receiptsByEvent(receiver: Receiver): Map<string, Array<{ webhookId: string }>> {
  const byEvent = new Map<string, Array<{ webhookId: string }>>();
  for (const delivery of receiver.received) {
    const list = byEvent.get(delivery.envelope.id) ?? [];
    list.push({ webhookId: delivery.webhookId });
    byEvent.set(delivery.envelope.id, list);
  }
  return byEvent;
}

describe('Hookline through a JetStream stream leader failure', () => {
  it('kill -9 of the server leading the events stream, then its return: every acked event delivered once per delivery, Hookline up throughout', async () => {
    cluster = await startNatsCluster('users');
    publisher = await cluster.connect();
    const names = uniqueNatsNames();
    hookline = await startTestHookline({ ...natsSettings(cluster.seeds, names), ...(cluster.access() as Partial<Settings>), natsReplicas: 3 });
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const node = hookline;

    // Hookline answering is sampled all along; a single failed or non-200 answer fails the test.
    let healthFailures = 0;
    let sampling = true;
    const health = (async () => {
      while (sampling) {
        const status = await fetch(`${node.url}/healthz`).then((answer) => answer.status, () => 0);
        if (status !== 200) healthFailures++;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    const events = startContinuousPublisher(publisher, { projectId: 'default', subjectPrefix: names.natsSubjectPrefix, tag: 'leader', deadlineMs: 120_000 });
    await waitFor(() => events.acked.size >= 150 && receiver.received.length >= 50, { timeoutMs: 30_000, message: 'events flowing before the kill' });

    const leaderName = await cluster.streamLeader(publisher, names.natsStream);
    const leader = cluster.member(leaderName);
    await leader.kill9();
    const ackedAtKill = events.acked.size;
    // Another server leads the stream now: publishes are acked again, and Hookline delivers them.
    const newLeader = await cluster.streamLeader(publisher, names.natsStream, leaderName);
    await waitFor(() => events.acked.size >= ackedAtKill + 150, { timeoutMs: 60_000, message: 'publishes acked by the new stream leader' });

    await leader.start();
    const ackedAtReturn = events.acked.size;
    await waitFor(() => events.acked.size >= ackedAtReturn + 100, { timeoutMs: 60_000, message: 'publishes acked after the old leader came back' });
    await events.stop();

    const missing = () => {
      const received = receiptsByEvent(receiver);
      return [...events.acked].filter((id) => !received.has(id));
    };
    await waitFor(() => missing().length === 0, { timeoutMs: 90_000, intervalMs: 200, message: `all ${events.acked.size} acked events delivered (missing ${missing().slice(0, 5).join(', ')})` });
    sampling = false;
    await health;

    const byEvent = receiptsByEvent(receiver);
    let repeats = 0;
    for (const [id, receipts] of byEvent) {
      // Nothing invented, and a repeat is the same delivery sent again, never a second delivery.
      expect(events.attempted.has(id), `${id} was published`).toBe(true);
      expect(new Set(receipts.map((receipt) => receipt.webhookId)).size, `deliveries of ${id}`).toBe(1);
      repeats += receipts.length - 1;
    }
    for (const id of events.acked) expect(byEvent.has(id), `${id} delivered`).toBe(true);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    expect(healthFailures, 'failed /healthz answers during the failover').toBe(0);
    console.info(`stream leader ${leaderName} killed → ${newLeader}: ${events.acked.size} acked events delivered, ${repeats} at-least-once repeats`);
  }, 300_000);
});
