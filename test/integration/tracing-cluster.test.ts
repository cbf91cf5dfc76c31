import { jetstream } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startOtlpCollector } from '../helpers/otlp-collector.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Issue 38, item 1 in cluster mode: the event record keeps its trace context, and the changelog
 * carries the record whole, so the attempt a new owner makes after kill -9 of the first is still
 * in the producer's trace. The ingest goes through the node that does not own the project: the
 * forwarded call keeps its traceparent.
 */

beforeAll(() => ensureBuilt(), 120_000);

const PRODUCER_TRACE = '5bf92f3577b34da6a3ce929d0e0e4736';
const PRODUCER_SPAN = '10f067aa0ba902b7';

describe('traces in a cluster', () => {
  it('a new owner\'s retry of an event is in the trace of its ingest on the old owner', async () => {
    const collector = await startOtlpCollector();
    let ownerKilled = false;
    const receiver = await startReceiver({ respond: () => ({ status: ownerKilled ? 204 : 503 }) });
    // The exporter's batch goes out every 100 ms: a node killed with -9 has sent what came before.
    const c = await startTestClusterForTest({ partitions: 4, leaseMs: 1_500, label: 'tracing', settings: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100' } });
    await Promise.all(['node-a', 'node-b'].map((nodeId) => c.start(nodeId, { OTEL_SERVICE_NAME: nodeId })));
    const owners = await c.waitForOwnership(['node-a', 'node-b']);
    const { projectId, apiKey } = await c.createProject(c.node('node-a'), 'traced');
    const owner = c.node(owners.get(c.partitionOf(projectId))!);
    const survivor = c.live().find((node) => node !== owner)!;
    expect((await c.apiSettled(survivor, 'PUT', '/v1/webhook', { key: apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, retrySchedule: '0,2s,2s,1m' } })).status).toBe(200);

    const sent = await c.apiSettled(survivor, 'POST', '/v1/events', { key: apiKey, headers: { traceparent: `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01` }, body: { type: 'service.trigger.event', data: {} } });
    expect(sent.status).toBe(202);
    // Killed once its ingest and first attempt spans are exported.
    await waitFor(() => collector.spans.some((span) => span.serviceName === owner.nodeId && span.name === 'POST'), { timeoutMs: 10_000, message: 'the owner\'s failed attempt span' });
    await owner.kill9();
    ownerKilled = true;
    await c.waitForOwnership([survivor.nodeId], 15_000);
    await waitFor(() => collector.spans.some((span) => span.serviceName === survivor.nodeId && span.name === 'POST' && span.attributes['http.response.status_code'] === 204), { timeoutMs: 20_000, message: 'the survivor\'s successful attempt span' });

    const ingest = collector.spans.find((span) => span.name === 'ingest http' && span.serviceName === owner.nodeId);
    expect(ingest).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN });
    const retried = collector.spans.find((span) => span.serviceName === survivor.nodeId && span.name === 'POST' && span.attributes['http.response.status_code'] === 204)!;
    expect(retried).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: ingest!.spanId, attributes: { 'hookline.project_id': projectId, 'hookline.delivery_id': sent.body.deliveryId } });
    const first = collector.spans.find((span) => span.serviceName === owner.nodeId && span.name === 'POST')!;
    expect(first).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: ingest!.spanId, attributes: { 'hookline.attempt': 1, 'http.response.status_code': 503 } });
  }, 90_000);

  it('an event published without its partition keeps its traceparent through the router to its owner', async () => {
    const collector = await startOtlpCollector();
    const receiver = await startReceiver();
    const c = await startTestClusterForTest({ partitions: 4, leaseMs: 1_500, label: 'tracing-router', settings: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100' } });
    await c.startSettled(['node-a', 'node-b']);
    const { projectId, apiKey } = await c.createProject(c.node('node-a'), 'routed');
    expect((await c.apiSettled(c.node('node-a'), 'PUT', '/v1/webhook', { key: apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } })).status).toBe(200);

    const messageHeaders = headers();
    messageHeaders.set('traceparent', `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01`);
    await jetstream(c.nats).publish(`${c.names.natsSubjectPrefix}.${projectId}`, JSON.stringify({ id: 'evt_routed', type: 'service.trigger.event', data: {} }), { headers: messageHeaders });
    const attempt = await waitFor(() => collector.spans.find((span) => span.name === 'POST' && span.attributes['hookline.event_id'] === 'evt_routed'), { timeoutMs: 15_000, message: 'the routed event\'s attempt span' });
    const ingest = collector.spans.find((span) => span.name === 'ingest nats' && span.spanId === attempt.parentSpanId);
    expect(ingest).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN, attributes: { 'hookline.project_id': projectId } });
  }, 90_000);
});
