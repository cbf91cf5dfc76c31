import { HooklineError } from '../errors.js';
import type { FilterRule } from '../filter/rule.js';
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
  /** @default {} */
  headers?: Record<string, string> | undefined;
  /** @default null */
  filter?: FilterRule | null | undefined;
  /** @default null */
  operationalUrl?: string | null | undefined;
  /** @default 'unordered' */
  ordering?: 'unordered' | 'fifo' | undefined;
  /** @default null */
  maxConcurrency?: number | null | undefined;
  /** @default null */
  rateLimitPerSecond?: number | null | undefined;
  /** @default null */
  retrySchedule?: number[] | null | undefined;
  /** @default false */
  sendTraceparent?: boolean | undefined;
}

/** The fields a record written before they existed lacks. */
type AddedLater = 'headers' | 'filter' | 'ordering' | 'operationalUrl' | 'operationalSecret' | 'maxConcurrency' | 'rateLimitPerSecond' | 'retrySchedule' | 'sendTraceparent';
/** A webhook configuration as the actor holds it: every field present. */
export type Webhook = WebhookRecord & Required<Pick<WebhookRecord, AddedLater>>;

/** A webhook record as read from LMDB: fields it was written without take their defaults. */
export function withWebhookDefaults(stored: WebhookRecord | undefined): Webhook | undefined {
  if (!stored) return undefined;
  return {
    ...stored,
    headers: stored.headers ?? {},
    filter: stored.filter ?? null,
    ordering: stored.ordering ?? 'unordered',
    operationalUrl: stored.operationalUrl ?? null,
    operationalSecret: stored.operationalSecret ?? null,
    maxConcurrency: stored.maxConcurrency ?? null,
    rateLimitPerSecond: stored.rateLimitPerSecond ?? null,
    retrySchedule: stored.retrySchedule ?? null,
    sendTraceparent: stored.sendTraceparent ?? false,
  };
}

export function configureWebhook(existing: Webhook | undefined, input: ConfigureInput, now: number): Webhook {
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
    // A new URL is a new endpoint to judge: the old one's run of failures must not disable it at its first.
    failingSince: leavingDisabled || existing?.callbackUrl !== input.callbackUrl ? null : existing.failingSince,
    // Kept when the operator re-activates: the endpoint's first success then reports its recovery.
    disabledAt: existing?.disabledAt ?? null,
    disabledReason: leavingDisabled ? null : (existing?.disabledReason ?? null),
    // PUT replaces the configuration: a field left out is cleared to its default.
    headers: input.headers ?? {},
    filter: input.filter ?? null,
    ordering: input.ordering ?? 'unordered',
    operationalUrl: input.operationalUrl ?? null,
    operationalSecret: existing?.operationalSecret ?? (input.operationalUrl ? generateSecret() : null),
    maxConcurrency: input.maxConcurrency ?? null,
    rateLimitPerSecond: input.rateLimitPerSecond ?? null,
    retrySchedule: input.retrySchedule ?? null,
    sendTraceparent: input.sendTraceparent ?? false,
  };
}

/**
 * The retry schedule a delivery made (or a round started) under this configuration follows: the
 * project's own, or the node's `HOOKLINE_RETRY_SCHEDULE` when it has none.
 */
export function retryScheduleOf(webhook: Webhook | undefined, nodeSchedule: readonly number[]): readonly number[] {
  return webhook?.retrySchedule ?? nodeSchedule;
}

/** Disables an endpoint that has failed for too long; null when the machine does not allow it now. */
export function disableWebhook(existing: Webhook, reason: string, now: number): Webhook | null {
  const step = webhookConfigTable.next(existing.state, WEBHOOK_CONFIG_CONTEXT, { type: 'DISABLE' });
  if (!step || step.state !== 'disabled') return null;
  return { ...existing, state: 'disabled', updatedAt: now, disabledAt: now, disabledReason: reason };
}

/**
 * A new current secret. Every earlier secret signs for `graceSeconds` at most: the current one for
 * exactly that, older ones until their own grace ends if that is sooner. So `0` drops them all at
 * once, which is what a leaked secret needs whichever rotation it came from.
 */
export function rotateSecret(existing: Webhook, graceSeconds: number, now: number): { webhook: Webhook; previousSecretExpiresAt: number } {
  const previousSecretExpiresAt = now + graceSeconds * 1000;
  const retired = existing.secrets
    .map((secret) => ({ ...secret, expiresAt: Math.min(secret.expiresAt ?? previousSecretExpiresAt, previousSecretExpiresAt) }))
    .filter((secret) => secret.expiresAt > now);
  const secrets = [{ secret: generateSecret(), createdAt: now, expiresAt: null }, ...retired];
  return { webhook: { ...existing, secrets, updatedAt: now }, previousSecretExpiresAt };
}

/**
 * The configuration operational deliveries are made with: the operational URL and secret, always
 * active (they report on the endpoint, so they go out while it is paused or disabled); undefined,
 * which holds them, while no operational URL is set.
 */
export function operationalTarget(webhook: Webhook | undefined): Webhook | undefined {
  if (!webhook?.operationalUrl || !webhook.operationalSecret) return undefined;
  return {
    ...webhook,
    callbackUrl: webhook.operationalUrl,
    state: 'active',
    secrets: [{ secret: webhook.operationalSecret, createdAt: webhook.createdAt, expiresAt: null }],
    headers: {},
    filter: null,
    ordering: 'unordered',
    // The endpoint's limits are for the endpoint: Hookline's own reports about it are not held back by them.
    maxConcurrency: null,
    rateLimitPerSecond: null,
    // Hookline's own reports keep the node's schedule, whatever the project chose for its endpoint.
    retrySchedule: null,
    sendTraceparent: false,
    failingSince: null,
    disabledAt: null,
    disabledReason: null,
  };
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
