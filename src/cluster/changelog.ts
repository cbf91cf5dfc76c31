import { DeliverPolicy, RetentionPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { pack, unpack } from 'msgpackr';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../store/records.js';

/**
 * Each partition's state as a compacted JetStream changelog: one subject per record
 * (`<prefix>.<partition>.<kind>.<projectId>[.<id>]`) and at most one message kept per subject, so
 * the stream holds the latest version of every record and nothing older. A node taking a partition
 * over reads the last message of each of its subjects and has the partition's state.
 */

export type ChangelogRecord =
  | { kind: 'delivery'; projectId: string; record: DeliveryRecord }
  | { kind: 'event'; projectId: string; record: EventRecord }
  | { kind: 'webhook'; projectId: string; record: WebhookRecord };

const KIND_TOKEN = { delivery: 'd', event: 'e', webhook: 'w' } as const;
const TOKEN_KIND = { d: 'delivery', e: 'event', w: 'webhook' } as const;

export class PartitionChangelog {
  private readonly js: JetStreamClient;

  constructor(
    private readonly connection: NatsConnection,
    readonly stream: string,
    readonly subjectPrefix: string,
  ) {
    this.js = jetstream(connection);
  }

  async ensureStream(): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    try {
      await manager.streams.info(this.stream);
    } catch {
      await manager.streams.add({
        name: this.stream,
        subjects: [`${this.subjectPrefix}.>`],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        max_msgs_per_subject: 1,
      });
    }
  }

  private subject(partition: number, change: ChangelogRecord): string {
    const id = change.kind === 'webhook' ? '' : `.${change.record.id}`;
    return `${this.subjectPrefix}.${partition}.${KIND_TOKEN[change.kind]}.${change.projectId}${id}`;
  }

  /** Resolves once JetStream has stored the change (a node may die right after). */
  async append(partition: number, change: ChangelogRecord): Promise<void> {
    await this.js.publish(this.subject(partition, change), pack(change.record));
  }

  /** Every record of the partition, latest version each, handed to `apply` in stream order. */
  async restore(partition: number, apply: (change: ChangelogRecord) => Promise<void> | void): Promise<number> {
    const consumer = await this.js.consumers.get(this.stream, { filter_subjects: `${this.subjectPrefix}.${partition}.>`, deliver_policy: DeliverPolicy.LastPerSubject });
    const info = await consumer.info();
    if (info.num_pending === 0) return 0;
    let restored = 0;
    const messages = await consumer.consume();
    for await (const message of messages) {
      const tokens = message.subject.slice(this.subjectPrefix.length + 1).split('.');
      const kind = TOKEN_KIND[tokens[1] as keyof typeof TOKEN_KIND];
      const projectId = tokens[2];
      if (kind && projectId) {
        await apply({ kind, projectId, record: unpack(message.data) } as ChangelogRecord);
        restored++;
      }
      if (message.info.pending === 0) break;
    }
    messages.stop();
    return restored;
  }
}
