import { HooklineError } from '../errors.js';
import { WEBHOOK_CONFIG_CONTEXT, webhookConfigTable } from '../machines/index.js';
import type { EventType } from '../sdk/types.js';
import { generateSecret } from '../signing/secret.js';
import type { WebhookRecord } from '../store/records.js';

/**
 * Pure changes to a project's webhook configuration. The configuration machine decides the state;
 * these functions carry the data (URL, filter, secrets) along. The actor persists what they return.
 */

export interface ConfigureInput {
  callbackUrl: string;
  status: 'active' | 'paused';
  eventTypes: EventType[];
}

export function configureWebhook(existing: WebhookRecord | undefined, input: ConfigureInput, now: number): WebhookRecord {
  const step = webhookConfigTable.next(existing?.state ?? 'unconfigured', WEBHOOK_CONFIG_CONTEXT, { type: 'CONFIGURE', status: input.status });
  if (!step || step.state === 'unconfigured') throw new HooklineError('HOOKLINE_ERR_INTERNAL', `configuration machine refused CONFIGURE(${input.status}) in ${existing?.state}`);
  const state = step.state;
  const leavingDisabled = existing?.state === 'disabled' && state !== 'disabled';
  return {
    callbackUrl: input.callbackUrl,
    state,
    eventTypes: [...new Set(input.eventTypes)],
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
    // The secret is made at the first PUT and kept by later ones.
    secrets: existing?.secrets ?? [{ secret: generateSecret(), createdAt: now, expiresAt: null }],
    failingSince: leavingDisabled ? null : (existing?.failingSince ?? null),
    disabledAt: leavingDisabled ? null : (existing?.disabledAt ?? null),
    disabledReason: leavingDisabled ? null : (existing?.disabledReason ?? null),
  };
}

/** Disables an endpoint that has failed for too long; null when the machine does not allow it now. */
export function disableWebhook(existing: WebhookRecord, reason: string, now: number): WebhookRecord | null {
  const step = webhookConfigTable.next(existing.state, WEBHOOK_CONFIG_CONTEXT, { type: 'DISABLE' });
  if (!step || step.state !== 'disabled') return null;
  return { ...existing, state: 'disabled', updatedAt: now, disabledAt: now, disabledReason: reason };
}

/** A new current secret; the previous one keeps signing for `graceSeconds` (0 drops it now). */
export function rotateSecret(existing: WebhookRecord, graceSeconds: number, now: number): { webhook: WebhookRecord; previousSecretExpiresAt: number } {
  const previousSecretExpiresAt = now + graceSeconds * 1000;
  const retired = existing.secrets
    .map((secret) => (secret.expiresAt === null ? { ...secret, expiresAt: previousSecretExpiresAt } : secret))
    .filter((secret) => secret.expiresAt! > now);
  const secrets = [{ secret: generateSecret(), createdAt: now, expiresAt: null }, ...retired];
  return { webhook: { ...existing, secrets, updatedAt: now }, previousSecretExpiresAt };
}

/** Secrets that sign right now, newest first, and until when that list holds. */
export function signingSecrets(webhook: WebhookRecord, now: number): { secrets: string[]; validUntil: number } {
  let validUntil = Infinity;
  const secrets: string[] = [];
  for (const secret of webhook.secrets) {
    if (secret.expiresAt !== null && secret.expiresAt <= now) continue;
    secrets.push(secret.secret);
    if (secret.expiresAt !== null) validUntil = Math.min(validUntil, secret.expiresAt);
  }
  return { secrets, validUntil };
}
