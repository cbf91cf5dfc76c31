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
    expect(detailMessages(answer)['body.metadata']).toBe(`unknown key "tenantId": metadata may hold only ${METADATA_KEYS}`);
  });

  it('an unknown body field names the fields there are', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {}, payload: {} } });
    expect(detailMessages(answer)['body']).toBe('unknown key "payload": an event may hold only id, type, data, metadata, timestamp');
  });

  it.each(['0', '251', '2.5', 'ten'])('limit=%s is answered with the range 1-250, on both list routes', async (limit) => {
    const hookline = await startTestHookline();
    for (const path of ['/v1/logs/webhook-deliveries', '/v1/logs/rejected-events']) {
      const answer = await hookline.api('GET', `${path}?limit=${limit}`);
      expect(detailMessages(answer)['query.limit']).toBe('must be a whole number 1-250');
    }
  });
});
