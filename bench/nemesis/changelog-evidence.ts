import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
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

/** How long the read may wait for a message while short of the leader's last batch. */
const STALL_MS = 10_000;

export async function changelogEvidence(connection: NatsConnection, partition: number, eventId: string, startedAt: number): Promise<string[]> {
  const subject = CHANGELOG.subject(partition);
  // Read through the last batch the stream's leader holds (a message get is the leader's answer),
  // not where the replica serving the consumer ends: a replica behind would say "nothing of" wrongly.
  const leaderLast = (await (await jetstreamManager(connection)).streams.getMessage(CHANGELOG.stream, { last_by_subj: subject }).catch(() => null))?.seq ?? 0;
  const consumer = await jetstream(connection).consumers.get(CHANGELOG.stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
  if ((await consumer.info()).num_pending === 0 && leaderLast === 0) return [`changelog ${subject}: empty`];
  const lines: string[] = [];
  const deliveryIds = new Set<string>();
  const messages = await consumer.consume({ max_messages: 256 });
  let first = 0;
  let last = 0;
  let stall: NodeJS.Timeout | undefined;
  const watch = () => {
    clearTimeout(stall);
    stall = setTimeout(() => messages.stop(), STALL_MS);
  };
  try {
    let read = 0;
    watch();
    for await (const message of messages) {
      watch();
      first ||= message.seq;
      last = message.seq;
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
      if ((message.info.pending === 0 && message.seq >= leaderLast) || ++read >= MOST_BATCHES) break;
    }
  } finally {
    clearTimeout(stall);
    messages.stop();
  }
  const span = `batches #${first} to #${last} read, the leader's last #${leaderLast}${last < leaderLast ? ': the read fell short' : ''}`;
  return lines.length > 0 ? [...lines, `changelog ${subject}: ${span}`] : [`changelog ${subject} (${span}): nothing of ${eventId}`];
}
