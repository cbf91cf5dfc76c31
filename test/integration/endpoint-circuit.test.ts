import { describe, expect, it } from 'vitest';
import { operationalEventSchema } from '../../src/actors/operational-events.js';
import { ALL_TYPES, allDeliveries, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 35, part 3: a circuit breaker per endpoint, against real receivers. */

const NOT_SENT = /^not sent: the endpoint's circuit is open after \d+ consecutive failures \(since \d{4}-\d{2}-\d{2}T[\d:.]+\+00:00\); (next probe at \d{4}-\d{2}-\d{2}T[\d:.]+\+00:00|a probe is in flight)$/;

async function metric(hookline: TestHookline, line: RegExp): Promise<number> {
  const text = await (await fetch(`${hookline.url}/metrics`)).text();
  const found = text.split('\n').find((entry) => line.test(entry));
  return found === undefined ? Number.NaN : Number(found.split(' ').pop());
}

const events = (count: number) => Array.from({ length: count }, (_, n) => ({ type: 'service.trigger.event' as const, data: { n } }));

describe('endpoint circuit breaker', () => {
  it('a dead endpoint with 200 waiting gets the threshold and the probes, the rest fail unsent on their schedule; a probe that succeeds closes it', async () => {
    const failures = 5;
    const probeIntervalMs = 200;
    const hookline = await startTestHookline({ circuitFailures: failures, circuitProbeIntervalMs: probeIntervalMs, retrySchedule: [0, 100, 200, 400, 800], endpointConcurrency: 5 });
    let up = false;
    const receiver = await startReceiver({ respond: () => ({ status: up ? 204 : 503 }) });
    const ops = await startReceiver();
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, operationalUrl: ops.url });
    expect((await hookline.client.getWebhook()).circuit).toEqual({ state: 'closed', consecutiveFailures: 0, openedAt: null, nextProbeAt: null });

    const started = Date.now();
    const sent = await hookline.client.sendEvents(events(200));
    const ids = sent.map((item) => (item as { deliveryId: string }).deliveryId);
    const open = await waitFor(async () => {
      const { circuit } = await hookline.client.getWebhook();
      return circuit.state !== 'closed' ? circuit : null;
    }, { message: 'the circuit open' });
    expect(open.consecutiveFailures).toBeGreaterThanOrEqual(failures);
    expect(Date.parse(open.nextProbeAt!) - Date.parse(open.openedAt!)).toBeGreaterThanOrEqual(probeIntervalMs);
    expect(await metric(hookline, /^hookline_endpoint_circuits_open /)).toBe(1);

    // Every delivery keeps its schedule and dead-letters after its fifth attempt, sent or not.
    await waitFor(async () => (await allDeliveries(hookline.client)).every((delivery) => delivery.status === 'dead_lettered') || null, { timeoutMs: 15_000, message: 'all 200 dead-lettered' });
    const elapsed = Date.now() - started;
    // The first attempts in flight (the concurrency cap), then one probe per interval at most.
    expect(receiver.received.length).toBeLessThanOrEqual(failures + 5 + Math.ceil(elapsed / probeIntervalMs) + 1);
    expect(receiver.received.length).toBeLessThan(100);
    const detail = await hookline.client.getDelivery(ids[150]!);
    expect(detail.attempts).toBe(5);
    const unsent = detail.attemptLog.filter((attempt) => attempt.errorCode === 'circuit_open');
    expect(unsent.length).toBeGreaterThan(0);
    for (const attempt of unsent) {
      expect(attempt).toMatchObject({ statusCode: null, durationMs: 0, responseBody: '' });
      expect(attempt.error).toMatch(NOT_SENT);
    }
    expect(detail.transitions.map((hop) => `${hop.from}>${hop.to}:${hop.event}`)).toContain('retrying>failed:CIRCUIT_OPEN');
    expect(await metric(hookline, /^hookline_delivery_attempts_total\{outcome="circuit_open"\} /)).toBeGreaterThan(0);

    // The receiver is back: the next probe closes the circuit, and new deliveries and redriven ones go out.
    up = true;
    const later = await hookline.client.sendEvents(events(20));
    await waitFor(async () => (await hookline.client.getWebhook()).circuit.state === 'closed' || null, { message: 'the circuit closed by a probe' });
    for (const item of later) await waitForDeliveryStatus(hookline.client, (item as { deliveryId: string }).deliveryId, 'succeeded');
    expect((await hookline.client.redriveDeadLetters()).redriven).toBe(200);
    await waitFor(async () => (await allDeliveries(hookline.client)).every((delivery) => delivery.status === 'succeeded') || null, { timeoutMs: 10_000, message: 'every delivery succeeded' });
    expect(await metric(hookline, /^hookline_endpoint_circuits_open /)).toBe(0);
    expect(await metric(hookline, /^hookline_endpoint_circuit_transitions_total\{to="open"\} /)).toBe(1);
    expect(await metric(hookline, /^hookline_endpoint_circuit_transitions_total\{to="closed"\} /)).toBe(1);

    // Reported to the operational URL (dead letters too, 200 of them).
    await waitFor(() => ops.received.filter((delivery) => delivery.envelope.type === 'hookline.endpoint.circuit_closed').length === 1 || null, { message: 'the closed report' });
    const reports = ops.received.map((delivery) => operationalEventSchema.parse(JSON.parse(delivery.body.toString())) as { type: string; data: Record<string, unknown> });
    const circuitReports = reports.filter((report) => report.type.startsWith('hookline.endpoint.circuit_'));
    expect(circuitReports.map((report) => report.type)).toEqual(['hookline.endpoint.circuit_opened', 'hookline.endpoint.circuit_closed']);
    expect(circuitReports[0]!.data).toMatchObject({ projectId: 'default', callbackUrl: receiver.url, consecutiveFailures: failures, openedAt: open.openedAt });
    expect(circuitReports[1]!.data).toMatchObject({ projectId: 'default', callbackUrl: receiver.url, openedAt: open.openedAt });
  });

  it("spaces the probes by a 429's Retry-After when it is longer than the interval", async () => {
    const hookline = await startTestHookline({ circuitFailures: 2, circuitProbeIntervalMs: 20, retrySchedule: Array.from({ length: 60 }, (_, index) => (index === 0 ? 0 : 40)), endpointConcurrency: 1 });
    const receiver = await startReceiver({ respond: () => ({ status: 429, headers: { 'retry-after': '1' } }) });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    await hookline.client.sendEvents(events(20));
    await waitFor(() => receiver.received.length >= 5 || null, { timeoutMs: 10_000, message: 'three probes after the opening' });
    const { circuit } = await hookline.client.getWebhook();
    expect(circuit.state).not.toBe('closed');
    // After the two that opened it, each request is a probe, a second (the Retry-After) after the one before.
    const times = receiver.received.map((delivery) => delivery.receivedAt);
    for (let index = 2; index < times.length; index++) expect(times[index]! - times[index - 1]!).toBeGreaterThanOrEqual(950);

    // A PUT closes the circuit: due attempts are sent at once, well before the next probe was due.
    const before = receiver.received.length;
    const put = Date.now();
    const answer = await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    // (The attempts sent since may have failed already, and opened it again.)
    expect(answer.circuit.openedAt === null || Date.parse(answer.circuit.openedAt) >= Date.parse(circuit.openedAt!)).toBe(true);
    await waitFor(() => receiver.received.length > before || null, { timeoutMs: 800, message: 'an attempt sent after the PUT' });
    expect(receiver.received[before]!.receivedAt - put).toBeLessThan(800);
  });

  it('a disabled endpoint holds its deliveries as before: no attempt fails fast while it is not active', async () => {
    const hookline = await startTestHookline({ circuitFailures: 1, circuitProbeIntervalMs: 50, disableAfterMs: 100, retrySchedule: [0, ...Array.from({ length: 40 }, () => 30)] });
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    const sent = await hookline.client.sendEvents(events(5));
    // The probes' failures (not the unsent attempts) run out HOOKLINE_DISABLE_AFTER.
    const disabled = await waitFor(async () => {
      const webhook = await hookline.client.getWebhook();
      return webhook.status === 'disabled' ? webhook : null;
    }, { message: 'the endpoint disabled' });
    expect(disabled.circuit.state).not.toBe('closed');
    const before = await Promise.all(sent.map((item) => hookline.client.getDelivery((item as { deliveryId: string }).deliveryId)));
    const lastDue = Math.max(...before.map((delivery) => Date.parse(delivery.nextAttemptAt ?? delivery.updatedAt)));
    await waitFor(() => Date.now() > lastDue + 200 || null, { message: 'every held delivery past its due time' });
    const after = await Promise.all(sent.map((item) => hookline.client.getDelivery((item as { deliveryId: string }).deliveryId)));
    expect(after.map((delivery) => [delivery.status, delivery.attempts])).toEqual(before.map((delivery) => [delivery.status, delivery.attempts]));
    expect(after.every((delivery) => delivery.status === 'retrying' || delivery.status === 'pending')).toBe(true);
  });
});
