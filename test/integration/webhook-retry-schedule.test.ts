import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatRetrySchedule, parseRetrySchedule } from '../../src/config/duration.js';
import { WEBHOOK_RETRY_SCHEDULE } from '../../src/http/schemas.js';
import { ADMIN_KEY, ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Issue 38, item 4: a project's own `retrySchedule` (PUT /v1/webhook), in the format of
 * HOOKLINE_RETRY_SCHEDULE, decides its deliveries' and rounds' attempts; other projects on the node
 * keep the node's schedule. Real node, real LMDB, real receivers that always fail.
 */

const HOUR_MS = 3_600_000;
const validConfig = { callbackUrl: 'http://127.0.0.1:9/hooks', status: 'active', eventTypes: ['service.trigger.event'] };

describe('a project\'s retry schedule', () => {
  it('dead-letters on its own count (2 attempts at "0,100ms") while a project on the node\'s schedule is still retrying; rounds follow the schedule of their start', async () => {
    // The node's schedule: three attempts an hour apart, so its project is still retrying at the end.
    const hookline = await startTestHookline({ retrySchedule: [0, HOUR_MS, HOUR_MS], adminKey: ADMIN_KEY });
    const own = await startReceiver({ respond: () => ({ status: 500 }) });
    const nodes = await startReceiver({ respond: () => ({ status: 500 }) });
    const created = await hookline.api('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'node-schedule' } });
    const other = hookline.clientFor(created.body.apiKey);
    await configureReceiver(hookline, nodes, { client: other });
    expect((await other.getWebhook()).retrySchedule).toBeNull();
    await configureReceiver(hookline, own);
    const configured = await hookline.client.configureWebhook({ callbackUrl: own.url, status: 'active', eventTypes: ALL_TYPES, retrySchedule: '0,100ms' });
    expect(configured.retrySchedule).toBe('0,100ms');

    const waiting = (await other.sendEvent({ type: 'service.trigger.event', data: {} })).deliveryId!;
    const deliveryId = (await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} })).deliveryId!;

    const dead = await waitForDeliveryStatus(hookline.client, deliveryId, 'dead_lettered');
    expect(dead).toMatchObject({ attempts: 2, maxAttempts: 2, nextAttemptAt: null, lastAttempt: { statusCode: 500 } });
    expect(own.byWebhookId(deliveryId)).toHaveLength(2);
    const retrying = await waitForDeliveryStatus(other, waiting, 'retrying');
    expect(retrying).toMatchObject({ attempts: 1, maxAttempts: 3 });
    expect(Date.parse(retrying.nextAttemptAt!) - Date.parse(retrying.lastAttempt!.at)).toBeGreaterThanOrEqual(HOUR_MS - 1_000);
    expect(nodes.byWebhookId(waiting)).toHaveLength(1);

    // A redrive's round after a PUT of "0" is one attempt; after clearing it, the node's three.
    await hookline.client.configureWebhook({ callbackUrl: own.url, status: 'active', eventTypes: ALL_TYPES, retrySchedule: '0' });
    expect(await hookline.client.redriveDeadLetters()).toEqual({ redriven: 1, wouldRedrive: null });
    await waitFor(async () => {
      const detail = await hookline.client.getDelivery(deliveryId);
      return detail.status === 'dead_lettered' && detail.attempts === 3 ? detail : null;
    }, { message: 'the one-attempt round to dead-letter at 3 attempts' });
    expect(own.byWebhookId(deliveryId)).toHaveLength(3);

    await hookline.client.configureWebhook({ callbackUrl: own.url, status: 'active', eventTypes: ALL_TYPES });
    expect((await hookline.client.getWebhook()).retrySchedule).toBeNull();
    const later = (await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} })).deliveryId!;
    expect(await waitForDeliveryStatus(hookline.client, later, 'retrying')).toMatchObject({ attempts: 1, maxAttempts: 3 });
    expect(await hookline.client.getDelivery(deliveryId)).toMatchObject({ status: 'dead_lettered', attempts: 3 });
  });

  it('round-trips through PUT and GET: any schedule, however written, is shown in one form that reads back to the same delays, and a new delivery has its count of attempts', async () => {
    const hookline = await startTestHookline();
    // A delay written in any unit that holds it whole, in either case, with spaces around it.
    const units = [['ms', 1], ['s', 1_000], ['m', 60_000], ['h', HOUR_MS], ['d', 24 * HOUR_MS]] as const;
    const delay = fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.constantFrom(...units.map(([, size]) => size)).chain((size) => fc.integer({ min: 0, max: Math.floor(WEBHOOK_RETRY_SCHEDULE.maxDelayMs / size) }).map((n) => n * size)));
    const written = (ms: number) =>
      fc.tuple(fc.constantFrom(...units.filter(([, size]) => ms % size === 0)), fc.boolean(), fc.constantFrom('', ' ')).map(([[unit, size], upper, pad]) => `${pad}${ms / size}${upper ? unit.toUpperCase() : unit}${pad}`);
    const schedule = fc.array(delay, { minLength: 1, maxLength: WEBHOOK_RETRY_SCHEDULE.maxSteps }).chain((delays) => fc.tuple(fc.constant(delays), fc.tuple(...delays.map(written)).map((parts) => parts.join(','))));
    await fc.assert(
      fc.asyncProperty(schedule, async ([delays, text]) => {
        // Paused: the delivery is held, and shows the round it was made with.
        const put = await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, status: 'paused', retrySchedule: text } });
        expect(put.status, JSON.stringify(put.body)).toBe(200);
        expect(put.body.retrySchedule).toBe(formatRetrySchedule(delays));
        expect(parseRetrySchedule(put.body.retrySchedule)).toEqual(delays);
        expect((await hookline.api('GET', '/v1/webhook')).body).toEqual(put.body);
        const again = await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, status: 'paused', retrySchedule: put.body.retrySchedule } });
        expect(again.body.retrySchedule).toBe(put.body.retrySchedule);
        const { deliveryId } = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
        expect(await hookline.client.getDelivery(deliveryId!)).toMatchObject({ status: 'pending', attempts: 0, maxAttempts: delays.length });
      }),
      { seed: 3804, numRuns: 40 },
    );
    // Left out or null: the node's schedule again.
    expect((await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, retrySchedule: null } })).body.retrySchedule).toBeNull();
  });

  const format = 'a comma-separated list of durations (ms, s, m, h, d), such as 0,5s,5m,30m,2h';
  const duration = 'expected a non-negative integer with an optional unit ms, s, m, h or d (e.g. "250ms", "5s", "2h")';
  it.each([
    ['empty', '', 'invalid retry schedule "": expected at least one delay, e.g. "0,5s,5m"'],
    ['blank', '  ', 'invalid retry schedule "": expected at least one delay, e.g. "0,5s,5m"'],
    ['unparseable', 'soon', `invalid retry schedule "soon" at entry 1: invalid duration "soon": ${duration}`],
    ['an empty entry', '0,,5s', `invalid retry schedule "0,,5s" at entry 2: invalid duration "": ${duration}`],
    ['negative', '0,-1s', `invalid retry schedule "0,-1s" at entry 2: invalid duration "-1s": ${duration}`],
    ['fractional', '0,1.5s', `invalid retry schedule "0,1.5s" at entry 2: invalid duration "1.5s": ${duration}`],
    ['too many steps', Array(WEBHOOK_RETRY_SCHEDULE.maxSteps + 1).fill('1s').join(','), `at most ${WEBHOOK_RETRY_SCHEDULE.maxSteps} delays (attempts a round); got ${WEBHOOK_RETRY_SCHEDULE.maxSteps + 1}`],
    ['a delay past 30 days', '0,1h,31d', 'each delay at most 30d; entry 3 is 31d'],
    ['a number', 5, `must be a retry schedule, ${format}; got 5`],
    ['a list', ['0', '5s'], `must be a retry schedule, ${format}; got ["0","5s"]`],
    ['an object', { steps: '0' }, `must be a retry schedule, ${format}; got {"steps":"0"}`],
  ])('refuses %s: 400 validation_failed naming retrySchedule and the problem, and stores nothing', async (_name, retrySchedule, message) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, retrySchedule } });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: { code: 'validation_failed', message: `invalid body: body.retrySchedule: ${message}`, details: [{ path: 'body.retrySchedule', message }] } });
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(404);
  });
});
