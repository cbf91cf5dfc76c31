import { describe, expect, it } from 'vitest';
import { startTestHookline } from '../helpers/hookline.js';

/**
 * Validation answers name what is allowed, in plain words: a caller who misspelt an event type, a
 * status or a metadata key, or sent a page size out of range, learns the right value from the answer.
 */

const TYPES = 'service.trigger.event, service.connected_account.expired, service.trigger.disabled';
const STATUSES = 'pending, delivering, succeeded, retrying, dead_lettered';
const METADATA_KEYS = 'trigger_id, trigger_slug, connected_account_id, tenant_id, provider_key, auth_config_id, raw_event_id';

function detailMessages(answer: { status: number; body: any }): Record<string, string> {
  expect(answer.status).toBe(400);
  expect(answer.body.error.code).toBe('validation_failed');
  return Object.fromEntries(answer.body.error.details.map((detail: { path: string; message: string }) => [detail.path, detail.message]));
}

describe('validation messages list the allowed values', () => {
  it('an unknown event type names the three reserved types, in an event and in a webhook configuration', async () => {
    const hookline = await startTestHookline();
    const event = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.evnt', data: {} } });
    expect(detailMessages(event)['body.type']).toBe(`must be one of the three reserved event types: ${TYPES}; got "service.trigger.evnt"`);
    expect(event.body.error.message).toContain(TYPES);

    const webhook = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl: 'http://127.0.0.1:1/', status: 'active', eventTypes: ['trigger.event'] } });
    expect(detailMessages(webhook)['body.eventTypes.0']).toBe(`must be one of the three reserved event types: ${TYPES}; got "trigger.event"`);

    const filter = await hookline.api('GET', '/v1/logs/webhook-deliveries?eventType=x');
    expect(detailMessages(filter)['query.eventType']).toBe(`must be one of the three reserved event types: ${TYPES}; got "x"`);
  });

  it('an unknown delivery status names the five statuses', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('GET', '/v1/logs/webhook-deliveries?status=failed');
    expect(detailMessages(answer)['query.status']).toBe(`must be one of the five delivery statuses: ${STATUSES}; got "failed"`);
  });

  it('an unknown webhook status names the two that can be set', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl: 'http://127.0.0.1:1/', status: 'disabled', eventTypes: ['service.trigger.event'] } });
    expect(detailMessages(answer)['body.status']).toBe('must be one of the statuses a webhook can be set to: active, paused; got "disabled"');
  });

  it('an unknown metadata key names the seven keys', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {}, metadata: { tenant_id: 't', tenantId: 't' } } });
    expect(detailMessages(answer)['body.metadata']).toBe(`unknown key "tenantId" (did you mean "tenant_id"?): metadata may hold only ${METADATA_KEYS}`);
  });

  it('an unknown body field names the fields there are', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {}, payload: {} } });
    expect(detailMessages(answer)['body']).toBe('unknown key "payload": an event may hold only id, type, data, metadata, timestamp');
  });

  it('a missing or wrong field reads alike on every field: "required, <what>" or "must be <what>; got <value>"', async () => {
    const hookline = await startTestHookline();
    const event = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event' } });
    expect(event.body.error.message).toBe('invalid body: body.data: required, an object');
    const wrong = detailMessages(await hookline.api('POST', '/v1/events', { body: { id: 7, data: [], timestamp: 'today' } }));
    expect(wrong).toEqual({
      'body.id': 'must be "evt_" followed by 1-100 of A-Z a-z 0-9 _ -; got 7',
      'body.type': `required, one of the three reserved event types: ${TYPES}`,
      'body.data': 'must be an object; got []',
      'body.timestamp': 'must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T23:03:49+00:00; got "today"',
    });
    const webhook = detailMessages(await hookline.api('PUT', '/v1/webhook', { body: {} }));
    expect(webhook).toEqual({
      'body.callbackUrl': 'required, an absolute http or https URL',
      'body.status': 'required, one of the statuses a webhook can be set to: active, paused',
      'body.eventTypes': 'required, a list of event types',
    });
    const notUrl = detailMessages(await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl: 'ftp://x/', status: 'active', eventTypes: ['service.trigger.event'] } }));
    expect(notUrl['body.callbackUrl']).toBe('must be an absolute http or https URL; got "ftp://x/"');
  });

  it('a misspelt key is named as unknown, with the key it was probably meant to be', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackURL: 'http://127.0.0.1:1/', status: 'active', eventTypes: ['service.trigger.event'] } });
    expect(detailMessages(answer)).toEqual({
      'body.callbackUrl': 'required, an absolute http or https URL',
      body: 'unknown key "callbackURL" (did you mean "callbackUrl"?): the webhook configuration may hold only callbackUrl, status, eventTypes, headers, filter, ordering, operationalUrl, maxConcurrency, rateLimitPerSecond, retrySchedule, sendTraceparent',
    });
    const typo = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {}, metdata: {} } });
    expect(detailMessages(typo)['body']).toBe('unknown key "metdata" (did you mean "metadata"?): an event may hold only id, type, data, metadata, timestamp');
  });

  it.each(['0', '251', '2.5', 'ten'])('limit=%s is answered with the range 1-250, on both list routes', async (limit) => {
    const hookline = await startTestHookline();
    for (const path of ['/v1/logs/webhook-deliveries', '/v1/logs/rejected-events']) {
      const answer = await hookline.api('GET', `${path}?limit=${limit}`);
      expect(detailMessages(answer)['query.limit']).toBe('must be a whole number 1-250');
    }
  });
});
