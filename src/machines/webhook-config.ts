/**
 * The webhook configuration machine: the status of a project's one endpoint.
 *
 * - `unconfigured`: the project has no webhook yet; events are stored but get no delivery. Left by
 *   the first `CONFIGURE` (PUT /v1/webhook), to `active` or `paused` as the request asks.
 * - `active`: deliveries go out. `CONFIGURE` applies a new configuration and stays (`active`) or
 *   pauses (`paused`); `DISABLE` moves to `disabled` when the engine has seen every attempt to the
 *   endpoint fail for the configured number of days, or at once when the endpoint answers 410 Gone.
 * - `paused`: the operator stopped deliveries; matching events get a delivery that is held in
 *   `pending`. Left by `CONFIGURE` with `active`; `CONFIGURE` with `paused` stays. Not disabled
 *   while paused: nothing is attempted, so nothing can keep failing.
 * - `disabled`: Hookline stopped deliveries to an endpoint that kept failing; deliveries are held
 *   as while paused. Left only by the operator's `CONFIGURE`, to `active` or `paused`.
 *
 * Every `CONFIGURE` runs `updateConfig` (the request's URL and event types are applied even when
 * the status does not change); `DISABLE` runs `recordDisabled`. Both are effects bound by the
 * engine. The machine has no context of its own: the configuration lives in the store.
 */
import { setup } from 'xstate';

export const WEBHOOK_CONFIG_STATES = ['unconfigured', 'active', 'paused', 'disabled'] as const;
export type WebhookConfigState = (typeof WEBHOOK_CONFIG_STATES)[number];

/** The statuses an operator may ask for in PUT /v1/webhook. */
export type WebhookRequestedStatus = 'active' | 'paused';

export const WEBHOOK_CONFIG_EVENT_TYPES = ['CONFIGURE', 'DISABLE'] as const;
export type WebhookConfigEventType = (typeof WEBHOOK_CONFIG_EVENT_TYPES)[number];
export type WebhookConfigEvent =
  | { readonly type: 'CONFIGURE'; readonly status: WebhookRequestedStatus }
  | { readonly type: 'DISABLE' };

/** Always empty; present so that the table and XState agree on the snapshot's shape. */
export type WebhookConfigContext = Readonly<Record<string, never>>;
export const WEBHOOK_CONFIG_CONTEXT: WebhookConfigContext = Object.freeze({});

export function requestsActive(_context: WebhookConfigContext, event: WebhookConfigEvent): boolean {
  return event.type === 'CONFIGURE' && event.status === 'active';
}

export function requestsPaused(_context: WebhookConfigContext, event: WebhookConfigEvent): boolean {
  return event.type === 'CONFIGURE' && event.status === 'paused';
}

/** The plain functions behind the machine's named guards, by name. */
export const webhookConfigImplementations = {
  guards: { requestsActive, requestsPaused },
  updaters: {},
} as const;

const configure = [
  { guard: 'requestsActive', target: 'active', actions: 'updateConfig' },
  { guard: 'requestsPaused', target: 'paused', actions: 'updateConfig' },
] as const;

export const webhookConfigMachine = setup({
  types: {} as {
    context: WebhookConfigContext;
    events: WebhookConfigEvent;
  },
  guards: {
    requestsActive: ({ context, event }) => requestsActive(context, event),
    requestsPaused: ({ context, event }) => requestsPaused(context, event),
  },
  actions: {
    // Effects, bound by the engine: store the new callback URL, status and event types.
    updateConfig: () => {},
    // Effects, bound by the engine: store when and why the endpoint was disabled.
    recordDisabled: () => {},
  },
}).createMachine({
  id: 'webhookConfig',
  initial: 'unconfigured',
  context: WEBHOOK_CONFIG_CONTEXT,
  states: {
    unconfigured: {
      on: { CONFIGURE: [...configure] },
    },
    active: {
      on: {
        CONFIGURE: [...configure],
        DISABLE: { target: 'disabled', actions: 'recordDisabled' },
      },
    },
    paused: {
      on: { CONFIGURE: [...configure] },
    },
    disabled: {
      on: { CONFIGURE: [...configure] },
    },
  },
});
