import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Settings } from '../config/settings.js';
import type { Logger } from '../logger.js';
import type { Tracing } from '../tracing/tracing.js';
import { NatsTransport } from '../transport/nats.js';
import { consumerInfo, deleteConsumer, retrying } from '../transport/nats-streams.js';
import { verdictSubjectPrefix } from '../transport/verdict.js';
import { partitionFlowControl } from './flow-control.js';

/** What a partition's ingest consumer takes from its node. */
export interface PartitionConsumerContext {
  settings: Settings;
  /** The node's own connection and manager: one socket carries every partition's pulls and acks. */
  connection: NatsConnection;
  manager: JetStreamManager;
  partitions: number;
  logger: Logger;
  tracing: Tracing | null;
}

/**
 * The ingest consumer of a partition this node has just taken over (started by the caller): its
 * durable consumer `<HOOKLINE_NATS_DURABLE>-p<partition>`, restarted past the previous owner's ack
 * floor when that owner left messages unacknowledged.
 */
export async function openPartitionConsumer(context: PartitionConsumerContext, partition: number): Promise<NatsTransport> {
  const { settings } = context;
  const durable = `${settings.natsDurable}-p${partition}`;
  await restartPastAckFloor(context, partition, durable);
  // The node's own connection: a connection each meant a socket, its pings and its reads per partition.
  return new NatsTransport({
    servers: settings.natsUrl!,
    connection: context.connection,
    manager: context.manager,
    replicas: settings.natsReplicas,
    stream: settings.natsStream,
    subjectPrefix: `${settings.natsSubjectPrefix}.${partition}`,
    durable,
    streamSubjects: [`${settings.natsSubjectPrefix}.>`],
    verdictPrefix: verdictSubjectPrefix(settings.natsSubjectPrefix),
    logger: context.logger,
    tracing: context.tracing,
    ...partitionFlowControl(context.partitions),
  });
}

/**
 * Messages the previous owner was handed but never acknowledged (in its buffer or on the wire when
 * it stopped consuming, or when it died) would come back only after `ack_wait` (30 s). So the new
 * owner restarts the partition's durable consumer just past its ack floor: they come at once.
 * Messages past the floor that were acknowledged already come again too, and the store's event-id
 * de-duplication answers them as repeats (their events were replicated before the ack).
 */
async function restartPastAckFloor(context: PartitionConsumerContext, partition: number, durable: string): Promise<void> {
  const { manager, settings, logger } = context;
  const stream = settings.natsStream;
  // Each step retried on what a NATS server's death or a leader election answers (a timeout): given
  // up at once, the takeover failed and the partition waited out a backoff, again and again while
  // the cluster recovered (docs/nemesis.md, finding 6).
  const info = await retrying(`reading consumer ${durable}`, () => consumerInfo(manager, stream, durable), logger);
  if (!info || info.num_ack_pending === 0) return;
  await retrying(`restarting consumer ${durable} past its ack floor`, async () => {
    await deleteConsumer(manager, stream, durable);
    await manager.consumers.add(stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: info.ack_floor.stream_seq + 1,
      filter_subject: `${settings.natsSubjectPrefix}.${partition}.>`,
      max_ack_pending: partitionFlowControl(context.partitions).maxAckPending,
      ack_wait: info.config.ack_wait,
    });
  }, logger);
  logger.info({ partition, unacknowledged: info.num_ack_pending, from: info.ack_floor.stream_seq + 1 }, 'partition consumer restarted past its ack floor');
}
