import { describe, expect, it } from 'vitest';
import { GONE_REASON, endpointHealthAfter } from '../../src/actors/endpoint-health.js';
import { configureWebhook } from '../../src/actors/webhook-settings.js';

const HOUR = 3_600_000;
const active = configureWebhook(undefined, { callbackUrl: 'https://example.com/hooks', status: 'active', eventTypes: ['service.trigger.event'] }, 0);

describe('endpoint health', () => {
  it('410 Gone disables an active endpoint at once, and nothing else disables it before disableAfter', () => {
    expect(endpointHealthAfter(active, 'gone', 1, 5 * HOUR)).toMatchObject({ kind: 'disabled', reason: GONE_REASON, webhook: { state: 'disabled', disabledAt: 1, disabledReason: GONE_REASON } });
    const failing = endpointHealthAfter(active, 'failed', 1, 5 * HOUR);
    expect(failing).toMatchObject({ kind: 'failing', webhook: { failingSince: 1, state: 'active' } });
    const webhook = (failing as { webhook: typeof active }).webhook;
    expect(endpointHealthAfter(webhook, 'failed', 5 * HOUR, 5 * HOUR)).toEqual({ kind: 'unchanged' });
    expect(endpointHealthAfter(webhook, 'failed', 5 * HOUR + 1, 5 * HOUR)).toMatchObject({
      kind: 'disabled',
      // Every time Hookline writes has a numeric offset, as the API's own fields do.
      webhook: { state: 'disabled', disabledReason: 'every attempt failed since 1970-01-01T00:00:00.001+00:00' },
    });
  });

  it('a paused endpoint is not disabled, even by a 410', () => {
    const paused = { ...active, state: 'paused' as const };
    expect(endpointHealthAfter(paused, 'gone', 1, HOUR)).toEqual({ kind: 'unchanged' });
  });

  it('a success recovers a failing or once-disabled endpoint, once', () => {
    expect(endpointHealthAfter(active, 'succeeded', 1, HOUR)).toEqual({ kind: 'unchanged' });
    const recovered = endpointHealthAfter({ ...active, failingSince: 1 }, 'succeeded', 2, HOUR);
    expect(recovered).toMatchObject({ kind: 'recovered', webhook: { failingSince: null, disabledAt: null } });
    expect(endpointHealthAfter({ ...active, disabledAt: 1 }, 'succeeded', 2, HOUR)).toMatchObject({ kind: 'recovered' });
  });
});
