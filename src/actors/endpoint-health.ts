import { isoTime } from '../iso-time.js';
import type { Webhook } from './webhook-settings.js';
import { disableWebhook } from './webhook-settings.js';

/**
 * What an attempt's outcome does to the endpoint's health, decided apart from its effects (the
 * lifecycle saves the configuration and raises the operational event):
 * - a 410 Gone disables the endpoint at once (Standard Webhooks: the receiver is gone for good);
 * - a failure starts the run of failures (`failingSince`), or disables the endpoint once every
 *   attempt has failed for `disableAfterMs`;
 * - a success after failures, or after the endpoint was disabled, is its recovery.
 * The configuration machine decides whether a disable is allowed (not while paused or disabled).
 */
export type HealthChange =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'failing'; readonly webhook: Webhook }
  | { readonly kind: 'recovered'; readonly webhook: Webhook }
  | { readonly kind: 'disabled'; readonly webhook: Webhook; readonly reason: string };

const UNCHANGED: HealthChange = { kind: 'unchanged' };

export const GONE_REASON = 'the endpoint answered 410 Gone';

export function endpointHealthAfter(webhook: Webhook, outcome: 'succeeded' | 'failed' | 'gone', now: number, disableAfterMs: number): HealthChange {
  if (outcome === 'gone') return disabling(webhook, GONE_REASON, now);
  if (outcome === 'succeeded') {
    if (webhook.failingSince === null && webhook.disabledAt === null) return UNCHANGED;
    return { kind: 'recovered', webhook: { ...webhook, failingSince: null, disabledAt: null } };
  }
  if (webhook.failingSince === null) return { kind: 'failing', webhook: { ...webhook, failingSince: now } };
  if (now - webhook.failingSince < disableAfterMs) return UNCHANGED;
  return disabling(webhook, `every attempt failed since ${isoTime(webhook.failingSince)}`, now);
}

function disabling(webhook: Webhook, reason: string, now: number): HealthChange {
  const disabled = disableWebhook(webhook, reason, now);
  return disabled ? { kind: 'disabled', webhook: disabled, reason } : UNCHANGED;
}
