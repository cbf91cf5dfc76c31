import { describe, expect, it, onTestFinished } from 'vitest';
import { consumeOutcomes, outcomeStreamName } from '../../src/sdk/nats.js';
import type { Outcome, OutcomeConsumer } from '../../src/sdk/nats.js';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { SHARED_NATS_URL, natsSettings, uniqueNatsNames, useSharedJetStream } from '../helpers/nats.js';
import type { NatsNames } from '../helpers/nats.js';
import { deliveryOutcome } from '../../src/actors/outcome-reports.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * HOOKLINE_NATS_OUTCOMES against the shared JetStream: final outcomes published on
 * `<root>.outcomes.<project>.<type>`, read by the SDK's durable consumer (`consumeOutcomes`).
 */

const jetStream = useSharedJetStream();

function startNode(names: NatsNames, dataDir: string): Promise<TestHookline> {
  jetStream.streams.add(names.natsStream).add(outcomeStreamName(names.natsStream));
  return startTestHookline({ ...natsSettings(SHARED_NATS_URL, names), natsOutcomes: true, dataDir });
}

function sharedDataDir(): string {
  const dir = makeTempDir();
  // Registered first, so it runs after every node of the test has closed.
  onTestFinished(() => dir.remove());
  return dir.path;
}

/** A consumer of the delivery outcomes, keeping what it was handed. */
async function collect(names: NatsNames, durable: string, into: Outcome[]): Promise<OutcomeConsumer> {
  const consumer = await consumeOutcomes(jetStream.nc, (outcome) => void into.push(outcome), { durable, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, types: ['succeeded', 'dead_lettered'] });
  jetStream.transports.push(consumer);
  return consumer;
}

/** Waits until the durable has had, and acknowledged, every outcome message in the stream. */
async function drained(names: NatsNames, durable: string): Promise<void> {
  const stream = outcomeStreamName(names.natsStream);
  await waitFor(
    async () => {
      const info = await jetStream.manager.consumers.info(stream, durable);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { message: `consumer ${durable} to have acknowledged every outcome` },
  );
}

const countOf = (outcomes: Outcome[], deliveryId: string, type: Outcome['type']) => outcomes.filter((outcome) => outcome.deliveryId === deliveryId && outcome.type === type).length;

describe('outcomes on NATS subjects', () => {
  it('hands a durable consumer one outcome per delivery outcome: a dead letter, a success, across a node restart and a redrive', async () => {
    const names = uniqueNatsNames();
    const dataDir = sharedDataDir();
    let hookline = await startNode(names, dataDir);
    // Events with `fail` set are always answered 500: they dead-letter after the 3 attempts of the test schedule.
    const receiver = await startReceiver({ respond: (delivery) => ({ status: delivery.envelope.data.fail ? 500 : 204 }) });
    await configureReceiver(hookline, receiver);
    const failing = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { fail: true } });
    const passing = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { fail: false } });
    await waitForDeliveryStatus(hookline.client, failing.deliveryId!, 'dead_lettered');
    await waitForDeliveryStatus(hookline.client, passing.deliveryId!, 'succeeded');

    const outcomes: Outcome[] = [];
    const durable = `${names.natsDurable}_outcomes`;
    const first = await collect(names, durable, outcomes);
    await waitFor(() => outcomes.length >= 2, { message: 'the two outcomes' });
    const dead = outcomes.find((outcome) => outcome.type === 'dead_lettered')!;
    expect(dead).toMatchObject({ projectId: 'default', deliveryId: failing.deliveryId, eventId: failing.id, status: 'dead_lettered', attempts: 3, lastAttempt: { statusCode: 500 } });
    expect(outcomes.find((outcome) => outcome.type === 'succeeded')).toMatchObject({ deliveryId: passing.deliveryId, eventId: passing.id, status: 'succeeded', attempts: 1, lastAttempt: { statusCode: 204, error: null } });

    // The node restarts on its data, and the consumer under the same durable: nothing is handed twice.
    await first.stop();
    await hookline.close();
    hookline = await startNode(names, dataDir);
    await collect(names, durable, outcomes);
    const later = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { fail: true } });
    await waitForDeliveryStatus(hookline.client, later.deliveryId!, 'dead_lettered');
    // A redrive is a new round, whose dead letter is a second outcome of the delivery.
    await hookline.client.redriveDeadLetters({});
    await waitFor(async () => (await hookline.client.getDelivery(failing.deliveryId!)).attempts === 6 && (await hookline.client.getDelivery(later.deliveryId!)).attempts === 6, { message: 'both dead letters redriven and dead-lettered again' });
    await waitFor(() => countOf(outcomes, later.deliveryId!, 'dead_lettered') === 2 && countOf(outcomes, failing.deliveryId!, 'dead_lettered') === 2, { message: 'the redriven rounds\' dead letters' });
    await drained(names, durable);

    expect(countOf(outcomes, passing.deliveryId!, 'succeeded')).toBe(1);
    expect(outcomes.filter((outcome) => outcome.deliveryId === failing.deliveryId).map((outcome) => outcome.attempts)).toEqual([3, 6]);
    expect(outcomes.filter((outcome) => outcome.deliveryId === later.deliveryId).map((outcome) => outcome.attempts)).toEqual([3, 6]);
    expect(outcomes).toHaveLength(5);
  });

  it('publishes an endpoint change too, without an operational URL: a 410 disables the endpoint', async () => {
    const names = uniqueNatsNames();
    const hookline = await startNode(names, sharedDataDir());
    const receiver = await startReceiver({ respond: () => ({ status: 410 }) });
    await configureReceiver(hookline, receiver);
    const outcomes: Outcome[] = [];
    const consumer = await consumeOutcomes(jetStream.nc, (outcome) => void outcomes.push(outcome), { durable: 'changes', stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, types: ['endpoint_disabled'] });
    jetStream.transports.push(consumer);
    await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(() => outcomes.length > 0, { message: 'the endpoint_disabled outcome' });
    expect(outcomes[0]).toMatchObject({ type: 'endpoint_disabled', status: 'disabled', projectId: 'default', deliveryId: null, callbackUrl: receiver.url });
  });

  it('stores an outcome published twice under its message id once', async () => {
    const names = uniqueNatsNames();
    jetStream.streams.add(outcomeStreamName(names.natsStream));
    const { NatsOutcomePublisher } = await import('../../src/transport/nats-outcomes.js');
    const publisher = await NatsOutcomePublisher.start({ natsUrl: SHARED_NATS_URL }, { stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, replicas: 1, logger: { info() {}, warn() {}, error() {} } });
    onTestFinished(() => publisher.close());
    const report = deliveryOutcome({ projectId: 'default', deliveryId: 'dlv_1', eventId: 'evt_1', eventType: 't', createdAt: 0, status: 'dead_lettered', attempts: 3, attempt: undefined, at: 1 });
    // As a changelog replayed, or a publish tried again after a lost ack, would publish it.
    expect(await publisher.publish(report.outcome, report.messageId)).toBe(true);
    expect(await publisher.publish(report.outcome, report.messageId)).toBe(true);
    expect((await jetStream.manager.streams.info(outcomeStreamName(names.natsStream))).state.messages).toBe(1);
  });

  it('counts an outcome it could not publish, and delivers all the same', async () => {
    const names = uniqueNatsNames();
    const hookline = await startNode(names, sharedDataDir());
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    // No stream takes the outcome subjects any more: every try of a publish is refused.
    await jetStream.manager.streams.delete(outcomeStreamName(names.natsStream));
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    await waitFor(async () => /^hookline_outcome_publish_failures_total 1$/m.test(await (await fetch(`${hookline.url}/metrics`)).text()), { timeoutMs: 20_000, message: 'the failure counted' });
  });
});
