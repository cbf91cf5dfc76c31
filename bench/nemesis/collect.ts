import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { partitionOf } from '../../src/sdk/partition.js';
import { changelogEvidence } from './changelog-evidence.js';
import type { DeliveryView, NodeView, Violation } from './checks.js';
import type { NemesisNode } from './nodes.js';
import type { ProducedEvent } from './producers.js';
import type { Receipt } from './receivers.js';
import { ADMIN_KEY, type NemesisSystem } from './setup.js';

/**
 * What the checks read from the cluster after the heal: every delivery as each node's API lists it
 * (`GET /v1/logs/webhook-deliveries`, every page, every project), and for each violation the
 * evidence a reader needs: the delivery's attempts and transitions, the receipts and the node log
 * lines that name it, and for an event published over NATS where it stands in JetStream.
 */

const PAGE = 250;
const READ_TRIES = 5;
/** Violations of one check given evidence; the rest are only listed. */
const EVIDENCE_PER_CHECK = 10;
const LOG_LINES_PER_VIOLATION = 25;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function readNode(system: NemesisSystem, node: NemesisNode): Promise<Map<string, DeliveryView>> {
  const deliveries = new Map<string, DeliveryView>();
  for (const project of system.projects) {
    const client = system.client(node, project);
    for await (const delivery of client.listDeliveries({ limit: PAGE }, { signal: AbortSignal.timeout(60_000) })) {
      deliveries.set(delivery.id, {
        id: delivery.id,
        project: project.projectId,
        eventId: delivery.eventId,
        status: delivery.status,
        attempts: delivery.attempts,
        nextAttemptAt: delivery.nextAttemptAt === null ? null : Date.parse(delivery.nextAttemptAt),
      });
    }
  }
  return deliveries;
}

/** Each node's list of every delivery; a node that fails READ_TRIES times in a row is unreadable. */
export async function readViews(system: NemesisSystem): Promise<NodeView[]> {
  const views: NodeView[] = [];
  for (const node of system.nodes) {
    let error: string | null = null;
    let deliveries: Map<string, DeliveryView> | null = null;
    for (let attempt = 1; attempt <= READ_TRIES && !deliveries; attempt++) {
      try {
        deliveries = await readNode(system, node);
      } catch (failure) {
        error = failure instanceof Error ? failure.message : String(failure);
        await pause(1_000);
      }
    }
    views.push({ nodeId: node.id, deliveries, error: deliveries ? null : error });
  }
  return views;
}

/** Where the events published over NATS wait for the nodes: the stream, and each partition's durable consumer. */
export interface IngestStream {
  /** The producers' connection: it reads the changelog too. */
  connection: NatsConnection;
  manager: JetStreamManager;
  stream: string;
  /** `<durable>-p<partition>` is a partition's consumer. */
  durable: string;
  partitions: number;
}

/**
 * An event published over NATS, as JetStream and the nodes' rejected-events logs know it: whether
 * its message is in the stream, and whether its partition's consumer has acknowledged it (below the
 * ack floor: a node took it), is still to deliver it, or waits for its ack.
 */
async function natsEvidence(system: NemesisSystem, event: ProducedEvent, ingest: IngestStream): Promise<string[]> {
  const lines: string[] = [];
  const seq = event.natsSeq;
  if (seq === null) return ['JetStream: no sequence recorded for it'];
  const message = await ingest.manager.streams.getMessage(ingest.stream, { seq }).catch((error: unknown) => error as Error);
  const holder = message instanceof Error || !message ? null : message.header?.get('Nats-Msg-Id') ?? null;
  lines.push(message instanceof Error || !message ? `JetStream: stream ${ingest.stream} seq ${seq}: ${message instanceof Error ? message.message : 'no message'}` : `JetStream: stream ${ingest.stream} seq ${seq} holds ${holder === event.id ? 'this event' : `${holder ?? 'a message without an id'}, not this event`}, on ${message.subject}`);
  // A stream whose last sequence is below what was acknowledged into it lost messages (its leader moved back).
  const state = await ingest.manager.streams.info(ingest.stream).then((info) => info.state, (error: unknown) => error as Error);
  if (!(state instanceof Error)) lines.push(`JetStream: stream ${ingest.stream} holds ${state.messages} messages, seq ${state.first_seq} to ${state.last_seq}`);
  const durable = `${ingest.durable}-p${partitionOf(event.project, ingest.partitions)}`;
  const consumer = await ingest.manager.consumers.info(ingest.stream, durable).catch((error: unknown) => error as Error);
  if (consumer instanceof Error) lines.push(`consumer ${durable}: ${consumer.message}`);
  else {
    const acked = seq <= consumer.ack_floor.stream_seq;
    const where = acked ? 'at or below the ack floor: a node acknowledged it' : seq <= consumer.delivered.stream_seq ? 'delivered to a node, not acknowledged yet' : 'not delivered to any node yet';
    lines.push(`consumer ${durable}: delivered up to ${consumer.delivered.stream_seq}, ack floor ${consumer.ack_floor.stream_seq}, ${consumer.num_pending} pending, ${consumer.num_ack_pending} awaiting ack, ${consumer.num_redelivered} redelivered; seq ${seq} is ${where}`);
  }
  for (const node of system.nodes) {
    try {
      const answer = await fetch(`${node.url}/admin/v1/rejected-events?limit=250`, { headers: { authorization: `Bearer ${ADMIN_KEY}` }, signal: AbortSignal.timeout(5_000) });
      const { data } = (await answer.json()) as { data: Array<{ source: string; reason: string; message: string; payload: string }> };
      for (const rejected of data) if (rejected.source.endsWith(`#${seq}`) || rejected.payload.includes(event.id)) lines.push(`${node.id} rejected it: ${rejected.reason}: ${rejected.message}`);
    } catch (error) {
      lines.push(`${node.id} rejected events: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return lines;
}

/**
 * Adds evidence to the first violations of each check: the delivery's story from the API, where an
 * event published over NATS stands in JetStream, what its partition's changelog holds of it, the
 * receipts, the log lines.
 */
export async function addEvidence(system: NemesisSystem, violations: Violation[], events: readonly ProducedEvent[], receipts: readonly Receipt[], startedAt: number, ingest: IngestStream): Promise<void> {
  const given = new Map<string, number>();
  const node = system.nodes[0]!;
  const logs = system.nodes.map((each) => ({ id: each.id, lines: each.logLines() }));
  const byId = new Map(events.map((event) => [event.id, event]));
  for (const violation of violations) {
    const count = given.get(violation.check) ?? 0;
    if (count >= EVIDENCE_PER_CHECK || (!violation.eventId && !violation.deliveryId)) continue;
    given.set(violation.check, count + 1);
    const evidence: string[] = [];
    const event = violation.eventId ? byId.get(violation.eventId) : undefined;
    if (event) evidence.push(`producer: ${event.via}, first sent at ${event.sentAt - startedAt} ms, ${event.tries} tries, acknowledged at ${event.ackedAt === null ? 'never' : `${event.ackedAt - startedAt} ms`}${event.ackedBy ? ` by ${event.ackedBy}` : ''}${event.deliveryId ? ` as ${event.deliveryId}` : ''}`);
    if (event?.via === 'nats') evidence.push(...(await natsEvidence(system, event, ingest)));
    if (event) {
      const partition = partitionOf(event.project, ingest.partitions);
      evidence.push(...(await changelogEvidence(ingest.connection, partition, event.id, startedAt).catch((error: unknown) => [`changelog of partition ${partition}: ${error instanceof Error ? error.message : String(error)}`])));
    }
    const project = system.projects.find((each) => each.projectId === violation.project);
    if (project) {
      const client = system.client(node, project);
      if (violation.eventId) {
        // An event stored without a delivery is answered as a repeat when it comes again: it would explain a loss.
        const stored = await client.getEvent(violation.eventId, { signal: AbortSignal.timeout(10_000) }).then((found) => `stored, accepted at ${found.createdAt}`, (error: unknown) => (error as { code?: string }).code ?? String(error));
        evidence.push(`API: event ${violation.eventId}: ${stored}`);
      }
      try {
        const ids = violation.deliveryId ? [violation.deliveryId] : (await client.listDeliveriesPage({ eventId: violation.eventId!, limit: 10 }, { signal: AbortSignal.timeout(10_000) })).data.map((each) => each.id);
        if (ids.length === 0) evidence.push(`API: no delivery for event ${violation.eventId}`);
        for (const id of ids) {
          const detail = await client.getDelivery(id, { signal: AbortSignal.timeout(10_000) });
          evidence.push(`API: ${id} ${detail.status}, ${detail.attempts} attempts, next ${detail.nextAttemptAt ?? '–'}`);
          for (const attempt of detail.attemptLog) evidence.push(`  attempt ${attempt.attempt} at ${attempt.at}: ${attempt.statusCode ?? attempt.errorCode ?? '?'} ${attempt.error ?? ''}`.trimEnd());
          for (const transition of detail.transitions) evidence.push(`  ${transition.at} ${transition.from ?? '∅'} -> ${transition.to} (${transition.event})`);
        }
      } catch (error) {
        evidence.push(`API: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    for (const receipt of receipts) {
      if (receipt.eventId === violation.eventId || receipt.webhookId === violation.deliveryId) {
        evidence.push(`receiver: ${receipt.webhookId} for ${receipt.eventId} at ${receipt.receivedAt - startedAt} ms, answered ${receipt.status || 'nothing yet'}${receipt.verified ? '' : ', signature NOT verified'}`);
      }
    }
    const needles = [violation.eventId, violation.deliveryId].filter((needle): needle is string => Boolean(needle));
    const lines = logs.flatMap(({ id, lines: nodeLines }) => nodeLines.filter((line) => needles.some((needle) => line.includes(needle))).map((line) => `${id}: ${line}`));
    evidence.push(...lines.slice(0, LOG_LINES_PER_VIOLATION));
    if (lines.length > LOG_LINES_PER_VIOLATION) evidence.push(`(${lines.length - LOG_LINES_PER_VIOLATION} more log lines)`);
    violation.evidence = evidence;
  }
}

/** Each node's /metrics text at the end (for a post-mortem), or why it could not be read. */
export async function readMetrics(system: NemesisSystem): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const node of system.nodes) {
    try {
      texts.set(node.id, await (await fetch(`${node.url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text());
    } catch (error) {
      texts.set(node.id, `# not read: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  return texts;
}
