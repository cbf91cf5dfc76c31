import { describe, expect, it } from 'vitest';
import { tracingSettingsFrom } from '../../src/tracing/tracing-settings.js';
import { ALL_TYPES, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startOtlpCollector } from '../helpers/otlp-collector.js';
import type { CollectedSpan } from '../helpers/otlp-collector.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 38, item 1: OpenTelemetry traces, exported over OTLP/HTTP to a real collector. */

const PRODUCER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PRODUCER_SPAN = '00f067aa0ba902b7';
const traceparent = `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01`;
const SPAN_KIND = { SERVER: 2, CLIENT: 3 } as const;
const STATUS_ERROR = 2;

async function tracedNode() {
  const collector = await startOtlpCollector();
  const hookline = await startTestHookline({ tracing: tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'hookline-test' }) });
  return { collector, hookline };
}

const named = (spans: CollectedSpan[], name: string) => spans.filter((span) => span.name === name);

describe('OpenTelemetry traces', () => {
  it('exports the ingest span under the producer\'s traceparent, and each attempt and the dead letter under it, across retries', async () => {
    const { collector, hookline } = await tracedNode();
    // The first event fails once then succeeds; the second fails every attempt and dead-letters.
    let firstTries = 0;
    const receiver = await startReceiver({ respond: (delivery) => ((delivery.envelope.data as { n: number }).n === 2 || ++firstTries === 1 ? { status: 503 } : { status: 204 }) });
    await hookline.client.configureWebhook({ callbackUrl: `${receiver.url.replace('http://', 'http://user:pass@')}`, status: 'active', eventTypes: ALL_TYPES });

    const first = await hookline.api('POST', '/v1/events', { headers: { traceparent }, body: { type: 'service.trigger.event', data: { n: 1 } } });
    expect(first.status).toBe(202);
    const firstId = (first.body as { deliveryId: string }).deliveryId;
    await waitForDeliveryStatus(hookline.client, firstId, 'succeeded');
    const second = await hookline.api('POST', '/v1/events', { headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` }, body: { type: 'service.trigger.event', data: { n: 2 } } });
    const secondId = (second.body as { deliveryId: string }).deliveryId;
    await waitForDeliveryStatus(hookline.client, secondId, 'dead_lettered');
    // Closing flushes the exporter's batch: every span has reached the collector after it.
    await hookline.close();

    const [ingest, otherIngest] = named(collector.spans, 'ingest http');
    expect(ingest).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN, kind: SPAN_KIND.SERVER, serviceName: 'hookline-test', attributes: { 'hookline.project_id': 'default', 'hookline.event_count': 1 } });
    expect(otherIngest?.traceId).toBe('a'.repeat(32));

    const attempts = named(collector.spans, 'POST').filter((span) => span.attributes['hookline.delivery_id'] === firstId);
    expect(attempts.map((span) => span.attributes['hookline.attempt'])).toEqual([1, 2]);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: ingest!.spanId, kind: SPAN_KIND.CLIENT });
      expect(attempt.attributes).toMatchObject({ 'http.request.method': 'POST', 'url.full': `${receiver.url}`, 'hookline.project_id': 'default', 'hookline.delivery_id': firstId });
      expect(String(attempt.attributes['url.full'])).not.toContain('pass');
      expect(attempt.attributes['hookline.event_id']).toMatch(/^evt_/);
    }
    expect(attempts.at(-1)!.attributes['http.response.status_code']).toBe(204);

    const failed = named(collector.spans, 'POST').filter((span) => span.attributes['hookline.delivery_id'] === secondId);
    expect(failed.map((span) => span.attributes['hookline.attempt'])).toEqual([1, 2, 3]);
    for (const attempt of failed) {
      expect(attempt).toMatchObject({ traceId: 'a'.repeat(32), parentSpanId: otherIngest!.spanId, status: { code: STATUS_ERROR } });
      expect(attempt.attributes).toMatchObject({ 'http.response.status_code': 503, 'error.type': '503' });
    }
    const [deadLetter] = named(collector.spans, 'hookline.dead_letter');
    expect(deadLetter).toMatchObject({ traceId: 'a'.repeat(32), parentSpanId: otherIngest!.spanId, attributes: { 'hookline.delivery_id': secondId, 'hookline.attempts': 3 } });
    expect(collector.contentTypes).toContain('application/json');
  });

  it('makes a batch one ingest span with its count of events', async () => {
    const { collector, hookline } = await tracedNode();
    const answer = await hookline.api('POST', '/v1/events/batch', { headers: { traceparent }, body: { events: [{ type: 'service.trigger.event', data: { n: 1 } }, { type: 'service.trigger.event', data: { n: 2 } }] } });
    expect(answer.status).toBe(202);
    await hookline.close();
    const ingests = named(collector.spans, 'ingest http');
    expect(ingests).toHaveLength(1);
    expect(ingests[0]).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN, attributes: { 'hookline.event_count': 2 } });
  });

  it('starts a trace of its own for an ingest without a valid traceparent', async () => {
    const { collector, hookline } = await tracedNode();
    await hookline.api('POST', '/v1/events', { headers: { traceparent: 'not-a-traceparent' }, body: { type: 'service.trigger.event', data: {} } });
    await hookline.close();
    const [ingest] = named(collector.spans, 'ingest http');
    expect(ingest!.parentSpanId).toBe('');
    expect(ingest!.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('OpenTelemetry spans of endpoint changes', () => {
  it('marks a circuit that opens, and an endpoint disabled by 410 Gone', async () => {
    const collector = await startOtlpCollector();
    const hookline = await startTestHookline({ circuitFailures: 2, tracing: tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }) });
    let gone = false;
    const receiver = await startReceiver({ respond: () => ({ status: gone ? 410 : 503 }) });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    const failing = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, failing.deliveryId!, 'dead_lettered');
    expect((await hookline.client.getWebhook()).circuit.state).not.toBe('closed');

    // A PUT closes the circuit; the next attempt's 410 disables the endpoint.
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    gone = true;
    await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(async () => (await hookline.client.getWebhook()).status === 'disabled', { message: 'the endpoint disabled' });
    await hookline.close();

    expect(named(collector.spans, 'hookline.circuit.opened')[0]).toMatchObject({ attributes: { 'hookline.project_id': 'default', 'hookline.consecutive_failures': 2 } });
    expect(named(collector.spans, 'hookline.circuit.closed')).toHaveLength(1);
    expect(named(collector.spans, 'hookline.endpoint.disabled')[0]).toMatchObject({ attributes: { 'hookline.project_id': 'default' } });
  });
});

describe('sendTraceparent', () => {
  it('sends the attempt span\'s traceparent to the receiver, outside the signature, only when set', async () => {
    const { collector, hookline } = await tracedNode();
    const receiver = await startReceiver();
    const config = await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, sendTraceparent: true });
    expect(config.sendTraceparent).toBe(true);
    expect((await hookline.client.getWebhook()).sendTraceparent).toBe(true);
    receiver.secret = (await hookline.client.getSecret()).secret;

    const sent = await hookline.api('POST', '/v1/events', { headers: { traceparent }, body: { type: 'service.trigger.event', data: { n: 1 } } });
    await waitForDeliveryStatus(hookline.client, (sent.body as { deliveryId: string }).deliveryId, 'succeeded');
    const [delivery] = receiver.received;
    expect(delivery!.verified).toBe(true);
    const header = String(delivery!.headers.traceparent);
    expect(header).toMatch(new RegExp(`^00-${PRODUCER_TRACE}-[0-9a-f]{16}-01$`));

    // PUT replaces the configuration: left out, it is false again, and no header goes out.
    expect((await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES })).sendTraceparent).toBe(false);
    const again = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
    await waitForDeliveryStatus(hookline.client, again.deliveryId!, 'succeeded');
    expect(receiver.received[1]!.headers.traceparent).toBeUndefined();

    await hookline.close();
    // The header is the attempt span's own context.
    const [attempt] = named(collector.spans, 'POST');
    expect(header).toBe(`00-${attempt!.traceId}-${attempt!.spanId}-01`);
  });

  it('answers 400 naming the field for a value that is not a boolean', async () => {
    const hookline = await startTestHookline();
    for (const bad of ['yes', 1, null]) {
      const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl: 'http://127.0.0.1:9/hooks', status: 'active', eventTypes: ALL_TYPES, sendTraceparent: bad } });
      expect(answer.status).toBe(400);
      expect((answer.body as { error: { details: Array<{ path: string }> } }).error.details).toContainEqual(expect.objectContaining({ path: 'body.sendTraceparent' }));
    }
  });

  it('is false by default and sends no header while the node exports no traces', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    expect((await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES })).sendTraceparent).toBe(false);
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, sendTraceparent: true });
    const sent = await hookline.api('POST', '/v1/events', { headers: { traceparent }, body: { type: 'service.trigger.event', data: {} } });
    await waitForDeliveryStatus(hookline.client, (sent.body as { deliveryId: string }).deliveryId, 'succeeded');
    expect(receiver.received[0]!.headers.traceparent).toBeUndefined();
    // Nothing of the trace context is kept without tracing.
    expect(hookline.node.engine.store.getEvent('default', (sent.body as { id: string }).id)?.traceparent).toBeUndefined();
  });
});
