import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { configureWebhook, disableWebhook, operationalTarget, retryScheduleOf, rotateSecret, signingSecrets, withWebhookDefaults } from '../../src/actors/webhook-settings.js';
import type { ConfigureInput, Webhook } from '../../src/actors/webhook-settings.js';
import type { WebhookRecord } from '../../src/store/records.js';

/** Issue 15's, issue 35's and issue 38's fields in the pure configuration changes: defaults, replacement by PUT, kept secrets. */

const base: ConfigureInput = { callbackUrl: 'https://example.com/hooks', status: 'active', eventTypes: ['service.trigger.event'] };
const full: ConfigureInput = { ...base, headers: { 'X-Tenant': 'acme' }, filter: { type: 'service.trigger.event' }, ordering: 'fifo', operationalUrl: 'https://example.com/ops', maxConcurrency: 2, rateLimitPerSecond: 20, retrySchedule: [0, 100] };

const inputArb: fc.Arbitrary<ConfigureInput> = fc.record(
  {
    callbackUrl: fc.constant(base.callbackUrl),
    status: fc.constantFrom('active' as const, 'paused' as const),
    eventTypes: fc.constant(base.eventTypes),
    headers: fc.constant({ 'X-A': '1' }),
    filter: fc.constantFrom(null, { 'data.n': 1 }),
    ordering: fc.constantFrom('unordered' as const, 'fifo' as const),
    operationalUrl: fc.constantFrom(null, 'https://example.com/ops'),
    maxConcurrency: fc.constantFrom(null, 1, 7),
    rateLimitPerSecond: fc.constantFrom(null, 1, 500),
    retrySchedule: fc.constantFrom(null, [0], [0, 1_000, 60_000]),
    sendTraceparent: fc.boolean(),
  },
  { requiredKeys: ['callbackUrl', 'status', 'eventTypes'] },
);

describe('webhook settings', () => {
  it('a record stored before issue 15 reads with every default', () => {
    const old: WebhookRecord = { callbackUrl: base.callbackUrl, state: 'active', eventTypes: base.eventTypes, createdAt: 1, updatedAt: 1, secrets: [], failingSince: null, disabledAt: null, disabledReason: null };
    expect(withWebhookDefaults(old)).toEqual({ ...old, headers: {}, filter: null, ordering: 'unordered', operationalUrl: null, operationalSecret: null, maxConcurrency: null, rateLimitPerSecond: null, retrySchedule: null, sendTraceparent: false });
    expect(retryScheduleOf(withWebhookDefaults(old), [0, 5_000])).toEqual([0, 5_000]);
    expect(withWebhookDefaults(undefined)).toBeUndefined();
  });

  it('every PUT replaces the new fields (left out: the default) and keeps both secrets once made', () => {
    fc.assert(
      fc.property(fc.array(inputArb, { minLength: 1, maxLength: 6 }), (inputs) => {
        let webhook: Webhook | undefined;
        let operationalSecret: string | null = null;
        for (const [at, input] of inputs.entries()) {
          const before = webhook;
          webhook = configureWebhook(webhook, input, at + 1);
          expect(webhook).toMatchObject({
            headers: input.headers ?? {},
            filter: input.filter ?? null,
            ordering: input.ordering ?? 'unordered',
            operationalUrl: input.operationalUrl ?? null,
            maxConcurrency: input.maxConcurrency ?? null,
            rateLimitPerSecond: input.rateLimitPerSecond ?? null,
            retrySchedule: input.retrySchedule ?? null,
            sendTraceparent: input.sendTraceparent ?? false,
          });
          expect(retryScheduleOf(webhook, [7])).toEqual(input.retrySchedule ?? [7]);
          expect(webhook.secrets).toEqual(before?.secrets ?? webhook.secrets);
          operationalSecret ??= webhook.operationalSecret;
          expect(webhook.operationalSecret).toBe(operationalSecret);
          if (input.operationalUrl) expect(webhook.operationalSecret).toMatch(/^whsec_/);
        }
      }),
      { seed: 1515, numRuns: 200 },
    );
  });

  it('operational deliveries go to the operational URL with the operational secret, active whatever the endpoint, unordered, unpaced, plain and on the node\'s retry schedule', () => {
    const configured = configureWebhook(undefined, full, 1);
    const disabled = disableWebhook(configured, 'the endpoint answered 410 Gone', 2)!;
    expect(operationalTarget(disabled)).toMatchObject({
      callbackUrl: 'https://example.com/ops',
      state: 'active',
      secrets: [{ secret: configured.operationalSecret, expiresAt: null }],
      headers: {},
      filter: null,
      ordering: 'unordered',
      maxConcurrency: null,
      rateLimitPerSecond: null,
      retrySchedule: null,
    });
    expect(retryScheduleOf(operationalTarget(disabled), [0, 5_000])).toEqual([0, 5_000]);
    expect(operationalTarget(configureWebhook(configured, base, 3))).toBeUndefined();
  });

  it('a new callback URL starts the run of failures afresh; other changes keep it', () => {
    const failing = { ...configureWebhook(undefined, base, 1), failingSince: 2 };
    expect(configureWebhook(failing, { ...base, callbackUrl: 'https://example.com/moved' }, 3).failingSince).toBeNull();
    expect(configureWebhook(failing, { ...base, eventTypes: [base.eventTypes[0]!] }, 3).failingSince).toBe(2);
  });

  it('re-activation keeps disabledAt, so the first success after it reports a recovery', () => {
    const disabled = disableWebhook(configureWebhook(undefined, base, 1), 'gone', 2)!;
    expect(configureWebhook(disabled, base, 3)).toMatchObject({ state: 'active', disabledAt: 2, disabledReason: null, failingSince: null });
  });

  it('a rotation with grace g leaves no earlier secret signing past g from now, and g = 0 leaves only the new one', () => {
    const graceArb = fc.integer({ min: 0, max: 30 * 24 * 3600 });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 * 24 * 3600 * 1000 }), graceArb), { minLength: 1, maxLength: 6 }), (rotations) => {
        let webhook: Webhook = configureWebhook(undefined, base, 0);
        let now = 0;
        for (const [wait, grace] of rotations) {
          now += wait;
          const before = signingSecrets(webhook, now).secrets;
          const rotated = rotateSecret(webhook, grace, now);
          webhook = rotated.webhook;
          const [current, ...earlier] = webhook.secrets;
          expect(current).toMatchObject({ createdAt: now, expiresAt: null });
          expect(before).not.toContain(current!.secret);
          for (const secret of earlier) {
            expect(secret.expiresAt).toBeGreaterThan(now);
            expect(secret.expiresAt).toBeLessThanOrEqual(rotated.previousSecretExpiresAt);
          }
          // Nothing comes back: what signs after the rotation is the new secret and some of what signed before.
          expect(signingSecrets(webhook, now).secrets.slice(1).every((secret) => before.includes(secret))).toBe(true);
          if (grace === 0) expect(webhook.secrets).toEqual([current]);
        }
      }),
      { seed: 20261127, numRuns: 300 },
    );
  });

  it('rotating a leaked secret away with grace 0 also ends an older secret still in its grace', () => {
    const first = configureWebhook(undefined, base, 0);
    const leaked = rotateSecret(first, 86_400, 1_000).webhook;
    expect(signingSecrets(leaked, 2_000).secrets).toHaveLength(2);
    const clean = rotateSecret(leaked, 0, 3_000).webhook;
    expect(signingSecrets(clean, 3_000).secrets).toEqual([clean.secrets[0]!.secret]);
  });
});
