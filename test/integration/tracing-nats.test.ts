import { jetstream } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { tracingSettingsFrom } from '../../src/tracing/tracing-settings.js';
import { configureReceiver } from '../helpers/hookline.js';
import { useNatsHooklines } from '../helpers/nats-hooklines.js';
import { startOtlpCollector } from '../helpers/otlp-collector.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 38, item 1: a NATS message's `traceparent` header parents its ingest span and the attempts after it. */

const nats = useNatsHooklines();
const PRODUCER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const PRODUCER_SPAN = 'b7ad6b7169203331';

describe('OpenTelemetry traces of NATS ingest', () => {
  it('makes each message an ingest span under its traceparent header, with the attempt under it', async () => {
    const collector = await startOtlpCollector();
    const { hookline, names } = await nats.start({ tracing: tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }) });
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);

    const messageHeaders = headers();
    messageHeaders.set('traceparent', `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01`);
    messageHeaders.set('Nats-Msg-Id', 'evt_traced_nats');
    await jetstream(nats.connection()).publish(`${names.natsSubjectPrefix}.default`, JSON.stringify({ id: 'evt_traced_nats', type: 'service.trigger.event', data: {} }), { headers: messageHeaders });
    await waitFor(() => receiver.received.length === 1, { message: 'the delivery' });
    await hookline.close();

    const ingest = collector.spans.find((span) => span.name === 'ingest nats');
    expect(ingest).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN, attributes: { 'hookline.ingest.source': 'nats', 'hookline.event_count': 1 } });
    const attempt = collector.spans.find((span) => span.name === 'POST');
    expect(attempt).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: ingest!.spanId, attributes: { 'hookline.event_id': 'evt_traced_nats', 'http.response.status_code': 204 } });
  });
});
