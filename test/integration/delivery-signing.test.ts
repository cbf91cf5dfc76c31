import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/sdk/index.js';
import { ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver, type ReceivedDelivery } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** What arrives at the receiver: the envelope, its headers and signatures, replays and rotations. */

const metadata = {
  trigger_id: 'trg_1',
  trigger_slug: 'github-star',
  connected_account_id: 'ca_1',
  tenant_id: 'tn_1',
  provider_key: 'github',
  auth_config_id: 'ac_1',
  raw_event_id: 'raw_1',
};

const candidates = (delivery: ReceivedDelivery) => delivery.signature.split(' ');

function verifyWith(delivery: ReceivedDelivery, secret: string, signature = delivery.signature) {
  return verifyWebhookSignature({ id: delivery.webhookId, timestamp: delivery.webhookTimestamp, signature, body: delivery.body, secret });
}

describe('the delivered request', () => {
  it('carries the whole envelope, Standard Webhooks headers and a signature both verifiers accept', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const secret = await configureReceiver(hookline, receiver);
    const data = { repo: 'hookline', stars: 42, nested: { list: [1, 'two', null], unicode: 'héllo ✓' } };
    const sent = await hookline.client.sendEvent({ id: 'evt_env-1', type: 'service.trigger.event', data, metadata, timestamp: '2026-11-21T23:03:49.123Z' });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    const [delivery] = receiver.received;
    expect(delivery).toBeDefined();
    expect(delivery!.headers['content-type']).toBe('application/json');
    expect(delivery!.webhookId).toBe(sent.deliveryId);
    expect(Math.abs(Number(delivery!.webhookTimestamp) - Date.now() / 1000)).toBeLessThan(10);
    expect(delivery!.signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(delivery!.verified).toBe(true);
    expect(await verifyWith(delivery!, `whsec_${Buffer.alloc(32, 7).toString('base64')}`)).toBe(false);
    // The public standardwebhooks package accepts it too.
    const headers = { 'webhook-id': delivery!.webhookId, 'webhook-timestamp': delivery!.webhookTimestamp, 'webhook-signature': delivery!.signature };
    expect(() => new Webhook(secret).verify(delivery!.body.toString('utf8'), headers)).not.toThrow();

    const envelope = JSON.parse(delivery!.body.toString('utf8'));
    expect(Object.keys(envelope)).toEqual(['version', 'id', 'type', 'metadata', 'data', 'timestamp']);
    expect(envelope).toEqual({ version: 'v1', id: 'evt_env-1', type: 'service.trigger.event', metadata, data, timestamp: '2026-11-21T23:03:49.123+00:00' });
  });

  it('shows the ingest time with +00:00 when no timestamp is given, keeps a given offset, and metadata defaults to {}', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const before = Date.now();
    const plain = await hookline.client.sendEvent({ type: 'service.connected_account.expired', data: {} });
    const offset = await hookline.client.sendEvent({ type: 'service.trigger.disabled', data: {}, timestamp: '2026-01-02T03:04:05+02:00' });
    await waitForDeliveryStatus(hookline.client, plain.deliveryId!, 'succeeded');
    await waitForDeliveryStatus(hookline.client, offset.deliveryId!, 'succeeded');

    const byEvent = new Map(receiver.received.map((delivery) => [delivery.envelope.id, delivery.envelope]));
    const plainEnvelope = byEvent.get(plain.id)!;
    expect(plainEnvelope.metadata).toEqual({});
    expect(plainEnvelope.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/);
    expect(Date.parse(plainEnvelope.timestamp)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(plainEnvelope.timestamp)).toBeLessThanOrEqual(Date.now());
    expect(byEvent.get(offset.id)!.timestamp).toBe('2026-01-02T03:04:05+02:00');
  });

  it('is signed when it leaves: an attempt that waited for its origin\'s connection carries the time it was sent, and the secret of then', async () => {
    // One connection per origin: project B's attempt starts while project A's holds it, and waits.
    const hookline = await startTestHookline({ endpointConcurrency: 1, deliveryTimeoutMs: 10_000 });
    const holdMs = 3_000;
    const receiver = await startReceiver({ respond: (_delivery, index) => (index === 0 ? new Promise((answer) => setTimeout(() => answer({ status: 204 }), holdMs)) : { status: 204 }) });
    await configureReceiver(hookline, receiver);
    await hookline.node.engine.createProject('waiting', 'key-waiting');
    const waitingClient = hookline.clientFor('key-waiting');
    const oldSecret = await configureReceiver(hookline, receiver, { client: waitingClient });

    const first = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    await waitFor(() => receiver.received.length === 1, { message: "project A's attempt holds the connection" });
    const second = await waitingClient.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
    await waitFor(async () => (await waitingClient.getDelivery(second.deliveryId!)).status === 'delivering', { message: "project B's attempt started" });
    const { secret } = await waitingClient.rotateSecret({ graceSeconds: 0 });
    expect(receiver.received).toHaveLength(1);
    await waitForDeliveryStatus(waitingClient, second.deliveryId!, 'succeeded', holdMs + 5_000);
    await waitForDeliveryStatus(hookline.client, first.deliveryId!, 'succeeded');

    const waited = receiver.byWebhookId(second.deliveryId!)[0]!;
    expect(candidates(waited)).toHaveLength(1);
    expect(await verifyWith(waited, secret)).toBe(true);
    expect(await verifyWith(waited, oldSecret)).toBe(false);
    // Signed at its start it would be about holdMs old on arrival; a receiver's tolerance (300 s)
    // would refuse it after a long enough wait behind a slow origin.
    expect(waited.receivedAt / 1000 - Number(waited.webhookTimestamp)).toBeLessThan(1.5);
  });
});

describe('replay', () => {
  it('is a new delivery with a new webhook-id and the same envelope bytes, whatever eventTypes says now', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { a: 1 }, metadata: { tenant_id: 't' } });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.disabled'] });
    const replay = await hookline.client.replayEvent(sent.id);
    expect(replay.deliveryId).not.toBe(sent.deliveryId);
    const replayed = await waitForDeliveryStatus(hookline.client, replay.deliveryId, 'succeeded');
    expect(replayed).toMatchObject({ eventId: sent.id, eventType: 'service.trigger.event', attempts: 1 });

    const [original, again] = receiver.received;
    expect(again!.webhookId).toBe(replay.deliveryId);
    expect(again!.webhookId).not.toBe(original!.webhookId);
    expect(again!.envelope.id).toBe(original!.envelope.id);
    expect(again!.body.equals(original!.body)).toBe(true);
    expect(again!.verified).toBe(true);
    const listed = await hookline.client.listDeliveriesPage({ eventId: sent.id });
    expect(listed.data.map((delivery) => delivery.id)).toEqual([replay.deliveryId, sent.deliveryId]);
  });

  it('goes to the current callback URL, signed with the current secret, and a paused configuration holds it', async () => {
    const hookline = await startTestHookline();
    const oldReceiver = await startReceiver();
    await configureReceiver(hookline, oldReceiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    const newReceiver = await startReceiver();
    await configureReceiver(hookline, newReceiver, { status: 'paused' });
    const { secret } = await hookline.client.rotateSecret({ graceSeconds: 0 });
    newReceiver.secret = secret;
    const replay = await hookline.client.replayEvent(sent.id);
    expect((await hookline.client.getDelivery(replay.deliveryId)).status).toBe('pending');

    await hookline.client.configureWebhook({ callbackUrl: newReceiver.url, status: 'active', eventTypes: ALL_TYPES });
    await waitForDeliveryStatus(hookline.client, replay.deliveryId, 'succeeded');
    expect(oldReceiver.received).toHaveLength(1);
    expect(newReceiver.received).toHaveLength(1);
    expect(candidates(newReceiver.received[0]!)).toHaveLength(1);
    expect(newReceiver.received[0]!.verified).toBe(true);
    expect(newReceiver.received[0]!.body.equals(oldReceiver.received[0]!.body)).toBe(true);
  });
});

describe('secret rotation', () => {
  it('during the grace period signs with both secrets, newest first, and each verifies on its own', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const oldSecret = await configureReceiver(hookline, receiver);
    const { secret: newSecret } = await hookline.client.rotateSecret();
    receiver.secret = newSecret;
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    const [delivery] = receiver.received;
    const parts = candidates(delivery!);
    expect(parts).toHaveLength(2);
    expect(parts.every((part) => /^v1,[A-Za-z0-9+/]{43}=$/.test(part))).toBe(true);
    expect(await verifyWith(delivery!, newSecret)).toBe(true);
    expect(await verifyWith(delivery!, oldSecret)).toBe(true);
    expect(await verifyWith(delivery!, newSecret, parts[0])).toBe(true);
    expect(await verifyWith(delivery!, oldSecret, parts[1])).toBe(true);
    expect(await verifyWith(delivery!, oldSecret, parts[0])).toBe(false);
  });

  it('with graceSeconds 0 signs with the new secret only', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const oldSecret = await configureReceiver(hookline, receiver);
    const { secret: newSecret } = await hookline.client.rotateSecret({ graceSeconds: 0 });
    receiver.secret = newSecret;
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    const [delivery] = receiver.received;
    expect(candidates(delivery!)).toHaveLength(1);
    expect(await verifyWith(delivery!, newSecret)).toBe(true);
    expect(await verifyWith(delivery!, oldSecret)).toBe(false);
  });
});
