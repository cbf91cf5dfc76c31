import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { visitBatch } from '../../src/cluster/changelog-entries.js';

/**
 * What a partition's changelog says of one event: each batch (in stream order, with its sequence
 * and when JetStream stored it) holding a version of the event, of a delivery made for it, or of
 * such a delivery's steps. A new owner restores the partition from these batches, so they tell why
 * a restore kept or left out a delivery. Read-only: an ordered consumer, stopped at the end.
 */

/** The changelog stream and subjects of Hookline's default names, which the nodes keep. */
export const CHANGELOG = { stream: 'HOOKLINE_EVENTS_CHANGELOG', subject: (partition: number) => `hookline.cluster.changelog.${partition}.log` } as const;

/** Batches read at most: the checks' partitions hold a few thousand in a long run. */
const MOST_BATCHES = 100_000;

export async function changelogEvidence(connection: NatsConnection, partition: number, eventId: string, startedAt: number): Promise<string[]> {
  const subject = CHANGELOG.subject(partition);
  const consumer = await jetstream(connection).consumers.get(CHANGELOG.stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
  if ((await consumer.info()).num_pending === 0) return [`changelog ${subject}: empty`];
  const lines: string[] = [];
  const deliveryIds = new Set<string>();
  const messages = await consumer.consume({ max_messages: 256 });
  try {
    let read = 0;
    for await (const message of messages) {
      const at = `changelog #${message.seq} at ${Math.round(message.info.timestampNanos / 1e6) - startedAt} ms`;
      visitBatch(message.data, (change) => {
        if (change.kind === 'event' && change.record.id === eventId) {
          lines.push(`${at}: event ${eventId}, deliveries [${change.record.deliveryIds.join(', ')}]`);
        } else if (change.kind === 'delivery' && (change.record.eventId === eventId || deliveryIds.has(change.record.id))) {
          deliveryIds.add(change.record.id);
          lines.push(`${at}: delivery ${change.record.id} ${change.record.status}, ${change.record.attempts} attempts`);
        } else if (change.kind === 'steps' && deliveryIds.has(change.record.id)) {
          lines.push(`${at}: steps of ${change.record.id}: ${change.record.changes.map((step) => step.status).join(' → ')}`);
        }
      });
      if (message.info.pending === 0 || ++read >= MOST_BATCHES) break;
    }
  } finally {
    messages.stop();
  }
  return lines.length > 0 ? lines : [`changelog ${subject}: nothing of ${eventId}`];
}
