import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FILTER_LIMITS } from '../../src/filter/rule.js';
import { ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { referenceMatches, ruleArbitrary, subjectArbitrary } from '../helpers/filter-reference.js';
import { startReceiver } from '../helpers/receiver.js';
import { testDataDir } from '../helpers/temp-dir.js';

/** Issue 15: payload filters decide at ingest which events get a delivery. */

const callbackUrl = 'http://127.0.0.1:9/hooks';
const SEED = 1515;

describe('payload filters', () => {
  it("the engine's decision at ingest equals the reference evaluator's, on random rules and events", async () => {
    const hookline = await startTestHookline();
    const cases = fc.sample(
      fc.tuple(
        ruleArbitrary().filter((rule) => Buffer.byteLength(JSON.stringify(rule)) <= FILTER_LIMITS.bytes),
        fc.array(subjectArbitrary, { minLength: 8, maxLength: 8 }),
      ),
      { seed: SEED, numRuns: 40 },
    );
    let matched = 0;
    let total = 0;
    for (const [rule, subjects] of cases) {
      // Paused: a delivery is made (and held) for a match, none for the rest; nothing is sent.
      const put = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'paused', eventTypes: ALL_TYPES, filter: rule } });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      expect(put.body.filter).toEqual(rule);
      const answer = await hookline.client.sendEvents(subjects.map((subject) => ({ type: subject.type as (typeof ALL_TYPES)[number], metadata: subject.metadata, data: subject.data })));
      for (const [index, subject] of subjects.entries()) {
        const item = answer[index]!;
        expect(item.ok).toBe(true);
        const expected = referenceMatches(rule, subject);
        expect(item.ok && item.deliveryId !== null, JSON.stringify({ rule, subject })).toBe(expected);
        matched += Number(expected);
        total++;
      }
    }
    // Both answers occur often enough for the comparison to say something.
    expect(matched).toBeGreaterThan(20);
    expect(total - matched).toBeGreaterThan(20);
  });

  it('delivers only matching events to a real receiver, keeps the filter across a restart, and a PUT without it clears it', async () => {
    const dataDir = testDataDir();
    const receiver = await startReceiver();
    const first = await startTestHookline({ dataDir });
    await configureReceiver(first, receiver);
    const filter = { 'data.amount': { $gte: 100 }, $or: [{ 'metadata.tenant_id': { $prefix: 'acme' } }, { type: 'service.trigger.disabled' }] };
    expect((await first.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, filter })).filter).toEqual(filter);

    const big = await first.client.sendEvent({ type: 'service.trigger.event', data: { amount: 150 }, metadata: { tenant_id: 'acme-eu' } });
    const small = await first.client.sendEvent({ type: 'service.trigger.event', data: { amount: 50 }, metadata: { tenant_id: 'acme-eu' } });
    const other = await first.client.sendEvent({ type: 'service.trigger.event', data: { amount: 500 }, metadata: { tenant_id: 'beta' } });
    expect(small.deliveryId).toBeNull();
    expect(other.deliveryId).toBeNull();
    await waitForDeliveryStatus(first.client, big.deliveryId!, 'succeeded');
    await first.close();

    const second = await startTestHookline({ dataDir });
    expect((await second.client.getWebhook()).filter).toEqual(filter);
    expect((await second.client.sendEvent({ type: 'service.trigger.event', data: { amount: 1 } })).deliveryId).toBeNull();
    const disabled = await second.client.sendEvent({ type: 'service.trigger.disabled', data: { amount: 100 } });
    await waitForDeliveryStatus(second.client, disabled.deliveryId!, 'succeeded');
    expect(receiver.received.map((delivery) => delivery.envelope.id)).toEqual([big.id, disabled.id]);

    expect((await second.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES })).filter).toBeNull();
    expect((await second.client.sendEvent({ type: 'service.trigger.event', data: { amount: 1 } })).deliveryId).not.toBeNull();
  });

  it.each<[string, unknown, string]>([
    ['a bad operand deep in $or', { $or: [{ type: 'service.trigger.event' }, { 'data.amount': { $gt: 'ten' } }] }, 'body.filter.$or[1].data.amount.$gt'],
    ['an unknown path', { 'payload.x': 1 }, 'body.filter.payload.x'],
    ['a list', [{ type: 'service.trigger.event' }], 'body.filter'],
    ['more than 4,096 bytes', { 'data.name': { $in: Array.from({ length: 400 }, (_, i) => `name-${i}`) } }, 'body.filter'],
  ])('refuses %s with 400 and the path of the bad node', async (_name, filter, path) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'active', eventTypes: ALL_TYPES, filter } });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
    expect(answer.body.error.details).toContainEqual(expect.objectContaining({ path }));
  });

  it('refuses a rule nested deeper than its byte limit allows with 400, not a 500 from a stack overflow', async () => {
    const hookline = await startTestHookline();
    const filter = `${'{"$not":'.repeat(20_000)}{"type":"service.trigger.event"}${'}'.repeat(20_000)}`;
    const answer = await hookline.api('PUT', '/v1/webhook', { body: `{"callbackUrl":"${callbackUrl}","status":"active","eventTypes":${JSON.stringify(ALL_TYPES)},"filter":${filter}}` });
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body.error.details).toContainEqual({ path: 'body.filter', message: `more than ${FILTER_LIMITS.bytes} bytes of compact JSON (nested over ${FILTER_LIMITS.bytes / 2} deep)` });
  });
});
