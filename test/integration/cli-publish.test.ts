import { jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { NO_VERDICT_EXIT, createPublishCommand } from '../../src/cli/publish.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { captureIo } from '../helpers/cli.js';
import { startTestCluster } from '../helpers/cluster.js';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import type { NatsNames } from '../helpers/nats.js';
import { useNatsHooklines } from '../helpers/nats-hooklines.js';
import { startReceiver } from '../helpers/receiver.js';

/**
 * `hookline publish` learns Hookline's verdict on the event it published, over the shared NATS: each
 * test has its own stream and subject prefix. And an event whose id (and timestamp) the server made
 * may be sent again as the repeat it is.
 */

const nats = useNatsHooklines();
const natsHookline = () => nats.start();

async function publish(names: NatsNames, ...args: string[]) {
  const io = captureIo({ HOOKLINE_NATS_URL: SHARED_NATS_URL, HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix });
  const code = await createPublishCommand(io).run(args);
  return { code, out: io.out(), err: io.err() };
}

describe('hookline publish', () => {
  it('says the project does not exist, exit 1, instead of looking successful', async () => {
    const { names } = await natsHookline();
    const run = await publish(names, '--project', 'nosuch', '--type', 'service.trigger.event', '--data', '{"n":1}');
    expect(run.code, run.err).toBe(1);
    expect(run.out).toMatch(/^published evt_\S+ on \S+\.nosuch \(stream seq 1\)\n$/);
    expect(run.err).toMatch(/^hookline publish: rejected by Hookline \(unknown_project\): project "nosuch" does not exist; create it/);
  });

  it('prints the acceptance, with the delivery made, exit 0', async () => {
    const { hookline, names } = await natsHookline();
    await configureReceiver(hookline, await startReceiver());
    const run = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{"n":1}', '--id', 'evt_cli_1');
    expect(run.code, run.err).toBe(0);
    const deliveryId = /accepted by Hookline: evt_cli_1 in project "default" \(delivery (dlv_\S+) made\)/.exec(run.out)?.[1];
    expect(deliveryId, run.out).toBeDefined();
    await waitForDeliveryStatus(hookline.client, deliveryId!, 'succeeded');
  });

  it('rejects a body that conflicts with the first use of the id, exit 1', async () => {
    const { hookline, names } = await natsHookline();
    await hookline.client.sendEvent({ id: 'evt_taken', type: 'service.trigger.event', data: { n: 1 } });
    const run = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{"n":2}', '--id', 'evt_taken');
    expect(run.code, run.err).toBe(1);
    expect(run.err).toContain('hookline publish: rejected by Hookline (event_id_conflict): event evt_taken was already accepted with a different body');
  });

  it('within JetStream\'s duplicate window: the same event again is a repeat, another body under the id is rejected as a conflict, exit 1', async () => {
    const { names } = await natsHookline();
    const first = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{"n":1,"m":2}', '--id', 'evt_window');
    expect(first.code, first.err).toBe(0);
    const changed = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{"n":2}', '--id', 'evt_window');
    expect(changed.code, changed.out).toBe(1);
    expect(changed.err).toBe(
      `hookline publish: rejected (event_id_conflict): event evt_window was already published with a different body (JetStream kept the first, stream ${names.natsStream} seq 1, and dropped this one); use a new id for a new event\n`,
    );
    // Keys in another order are the same event.
    const again = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{"m":2,"n":1}', '--id', 'evt_window');
    expect(again.code, again.err).toBe(0);
    expect(again.out).toMatch(/: a repeat of the same event within JetStream's duplicate window, dropped by JetStream \(stream seq 1 is the first\)/);
  });

  it(`says honestly that no verdict came when no Hookline consumes the stream, exit ${NO_VERDICT_EXIT}`, async () => {
    const names = nats.ownNames();
    const manager = await jetstreamManager(nats.connection());
    await manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`] });
    const started = Date.now();
    const run = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{}', '--wait', '300ms');
    expect(run.code, run.err).toBe(NO_VERDICT_EXIT);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(run.out).toMatch(/^published evt_\S+ on \S+\.default \(stream seq 1\)\n$/);
    expect(run.err).toMatch(/^hookline publish: no verdict from Hookline within 0\.3 s: the event is stored in JetStream, but no Hookline consuming it answered/);
  });
});

describe('hookline publish to a cluster', () => {
  it('gets the same verdicts from a cluster node (the subject carries no partition)', async () => {
    ensureBuilt();
    const cluster = await startTestCluster({ partitions: 4, label: 'cli-publish' });
    try {
      await cluster.start('n1');
      await cluster.waitForOwnership(['n1'], 30_000);
      const names = cluster.names;
      const nosuch = await publish(names, '--project', 'nosuch', '--type', 'service.trigger.event', '--data', '{}', '--partitions', '4');
      expect(nosuch.code, nosuch.err).toBe(1);
      expect(nosuch.err).toContain('rejected by Hookline (unknown_project): project "nosuch" does not exist');
      const accepted = await publish(names, '--project', 'default', '--type', 'service.trigger.event', '--data', '{}', '--partitions', '4');
      expect(accepted.code, accepted.err).toBe(0);
      expect(accepted.out).toMatch(/accepted by Hookline: evt_\S+ in project "default" \(stored; it matches no webhook, so nothing is delivered\)/);
    } finally {
      await cluster.dispose();
    }
  }, 180_000); // a first build of dist/ takes a while on a busy machine
});

describe('repeating an event whose id the server made', () => {
  it('is a repeat (200, the first answer), not a "different body"; a different body is still 409', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const event = { type: 'service.trigger.event', data: { hello: 'world' }, metadata: { trigger_id: 'trg_1' } };
    const first = await hookline.api('POST', '/v1/events', { body: event });
    expect(first.status).toBe(202);
    const { id, deliveryId } = first.body as { id: string; deliveryId: string };
    await waitForDeliveryStatus(hookline.client, deliveryId, 'succeeded');

    // Sent again under the id the server made: the same event.
    const again = await hookline.api('POST', '/v1/events', { body: { ...event, id } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual({ id, deliveryId });
    // Sent again as it was delivered: the server-made id and timestamp spelled out.
    const delivered = receiver.received[0]!.envelope;
    const asDelivered = await hookline.api('POST', '/v1/events', { body: { id, type: delivered.type, data: delivered.data, metadata: delivered.metadata, timestamp: delivered.timestamp } });
    expect(asDelivered.status, JSON.stringify(asDelivered.body)).toBe(200);
    expect(asDelivered.body).toEqual({ id, deliveryId });
    // A truly different body, or another timestamp, under that id: still a conflict.
    const different = await hookline.api('POST', '/v1/events', { body: { ...event, id, data: { hello: 'mars' } } });
    expect(different.status).toBe(409);
    expect((different.body as { error: { code: string } }).error.code).toBe('event_id_conflict');
    const otherTime = await hookline.api('POST', '/v1/events', { body: { ...event, id, timestamp: '2020-01-01T00:00:00+00:00' } });
    expect(otherTime.status).toBe(409);
    expect(receiver.received).toHaveLength(1);

    // First sent with a timestamp of its own: sent again without it, that is another request (as
    // for an event sent with an id), so a conflict.
    const timed = await hookline.api('POST', '/v1/events', { body: { ...event, timestamp: '2026-01-02T03:04:05+00:00' } });
    expect(timed.status).toBe(202);
    const timedId = (timed.body as { id: string }).id;
    const untimed = await hookline.api('POST', '/v1/events', { body: { ...event, id: timedId } });
    expect(untimed.status).toBe(409);
    const timedAgain = await hookline.api('POST', '/v1/events', { body: { ...event, id: timedId, timestamp: '2026-01-02T03:04:05Z' } });
    expect(timedAgain.status, JSON.stringify(timedAgain.body)).toBe(200);
  });

  it('over NATS: an event published with no id is judged by the id Hookline made, and its repeat is accepted', async () => {
    const { hookline, names } = await natsHookline();
    const sent = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.disabled', data: { n: 7 } } });
    expect(sent.status).toBe(202);
    const id = (sent.body as { id: string }).id;
    const run = await publish(names, '--project', 'default', '--type', 'service.trigger.disabled', '--data', '{"n":7}', '--id', id);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toContain(`accepted by Hookline: ${id} in project "default" (a repeat of an event already accepted; nothing new was stored)`);
  });
});
