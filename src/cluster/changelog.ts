import { DeliverPolicy, RetentionPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { pack, unpack } from 'msgpackr';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../store/records.js';

/**
 * Each partition's state as a compacted JetStream changelog: one subject per record
 * (`<prefix>.<partition>.<kind>.<projectId>[.<id>]`) and at most one message kept per subject, so
 * the stream holds the latest version of every record and nothing older. A node taking a partition
 * over reads the last message of each of its subjects and has the partition's state.
 *
 * Appends of records that still change (live deliveries, webhook configuration) are conditional on
 * the subject's last sequence as this node last saw it (JetStream's expected-last-subject-sequence):
 * an append that a node cut off from NATS issued while it held the lease, and that reaches the
 * server only after another node took over and wrote the record, is refused instead of putting an
 * older version back.
 */

export type ChangelogRecord =
  | { kind: 'delivery'; projectId: string; record: DeliveryRecord }
  | { kind: 'event'; projectId: string; record: EventRecord }
  | { kind: 'webhook'; projectId: string; record: WebhookRecord };

const KIND_TOKEN = { delivery: 'd', event: 'e', webhook: 'w' } as const;
const TOKEN_KIND = { d: 'delivery', e: 'event', w: 'webhook' } as const;

/** Records whose later versions matter enough to track: a delivery not yet terminal, a webhook. */
function isTracked(change: ChangelogRecord): boolean {
  if (change.kind === 'webhook') return true;
  return change.kind === 'delivery' && change.record.status !== 'succeeded' && change.record.status !== 'dead_lettered';
}

export class PartitionChangelog {
  private readonly js: JetStreamClient;
  private manager: JetStreamManager | null = null;
  /** The last append of each subject still in flight: appends of one record go out one at a time. */
  private readonly tails = new Map<string, Promise<void>>();
  /** Stream sequence of the last version of each tracked record this node read or wrote. */
  private readonly lastSequence = new Map<string, number>();

  constructor(
    private readonly connection: NatsConnection,
    readonly stream: string,
    readonly subjectPrefix: string,
  ) {
    this.js = jetstream(connection);
  }

  async ensureStream(): Promise<void> {
    const manager = await this.jsm();
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

  private async jsm(): Promise<JetStreamManager> {
    this.manager ??= await jetstreamManager(this.connection);
    return this.manager;
  }

  private subject(partition: number, change: ChangelogRecord): string {
    const id = change.kind === 'webhook' ? '' : `.${change.record.id}`;
    return `${this.subjectPrefix}.${partition}.${KIND_TOKEN[change.kind]}.${change.projectId}${id}`;
  }

  /**
   * Resolves once JetStream has stored the change (a node may die right after). Each message is a
   * whole record and the stream keeps only the last per subject, so two versions of one record must
   * be stored in the order they were made: an append waits for the previous append of its subject
   * (a publish can be retried inside the client and overtaken by the next one otherwise).
   *
   * `stillHeld` says whether this node holds the partition's lease now. When a conditional append
   * finds the record written since (a previous owner's late append, or this node's own append
   * whose ack was lost), a holder's version wins: it appends again over the current last sequence.
   */
  append(partition: number, change: ChangelogRecord, stillHeld: () => boolean): Promise<void> {
    const subject = this.subject(partition, change);
    const data = pack(change.record);
    const tracked = isTracked(change);
    const publish = async () => {
      const expected = this.lastSequence.get(subject);
      let sequence: number;
      try {
        sequence = (await this.js.publish(subject, data, expected !== undefined ? { expect: { lastSubjectSequence: expected } } : {})).seq;
      } catch (error) {
        if (!isWrongLastSequence(error) || !stillHeld()) throw error;
        const last = await (await this.jsm()).streams.getMessage(this.stream, { last_by_subj: subject }).catch(() => null);
        sequence = (await this.js.publish(subject, data, { expect: { lastSubjectSequence: last?.seq ?? 0 } })).seq;
      }
      if (tracked) this.lastSequence.set(subject, sequence);
      else this.lastSequence.delete(subject);
    };
    const previous = this.tails.get(subject);
    const appended = previous ? previous.then(publish, publish) : publish();
    this.tails.set(subject, appended);
    const forget = () => {
      if (this.tails.get(subject) === appended) this.tails.delete(subject);
    };
    appended.then(forget, forget);
    return appended;
  }

  /** Every record of the partition, latest version each, handed to `apply` in stream order. */
  async restore(partition: number, apply: (change: ChangelogRecord) => Promise<void> | void): Promise<number> {
    this.forget(partition);
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
        const change = { kind, projectId, record: unpack(message.data) } as ChangelogRecord;
        await apply(change);
        if (isTracked(change)) this.lastSequence.set(message.subject, message.seq);
        restored++;
      }
      if (message.info.pending === 0) break;
    }
    messages.stop();
    return restored;
  }

  /** Drops what this node knew of a partition's records (it no longer holds it). */
  forget(partition: number): void {
    const prefix = `${this.subjectPrefix}.${partition}.`;
    for (const subject of this.lastSequence.keys()) if (subject.startsWith(prefix)) this.lastSequence.delete(subject);
  }
}

/** JetStream's "wrong last sequence" (API error 10071): the subject was written since. */
function isWrongLastSequence(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10071 || /wrong last sequence/i.test(String(message));
}
