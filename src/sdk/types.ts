/**
 * Public types of the Hookline management API (wire contract v1, see DESIGN.md). Times on the wire
 * are ISO 8601 strings with an offset; an absent value is `null`, never a missing key.
 */

import type { HooklineApiError } from './errors.js';

/** The three reserved event types; a webhook's `eventTypes` and every event's `type` are among them. */
export const EVENT_TYPES = [
  'service.trigger.event',
  'service.connected_account.expired',
  'service.trigger.disabled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Every state a delivery can be in; `succeeded` and `dead_lettered` are terminal until a retry or redrive. */
export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'retrying', 'dead_lettered'] as const;

export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Statuses a client may set with `configureWebhook`. */
export type WebhookConfigStatus = 'active' | 'paused';

/**
 * Statuses a configuration may be read back with. `disabled` cannot be set through `configureWebhook`;
 * like `paused`, it holds matching deliveries in `pending` instead of attempting them.
 */
export type WebhookStatus = WebhookConfigStatus | 'disabled';

/** The seven keys an event's `metadata` may carry (SPEC.md 2.3). */
export const METADATA_KEYS = [
  'trigger_id',
  'trigger_slug',
  'connected_account_id',
  'tenant_id',
  'provider_key',
  'auth_config_id',
  'raw_event_id',
] as const;

export type MetadataKey = (typeof METADATA_KEYS)[number];

/** Event metadata: only the seven keys, string values only. */
export type EventMetadata = Partial<Record<MetadataKey, string>>;

/** An ISO 8601 date-time string, or a `Date` that the client sends as `toISOString()`. */
export type DateInput = Date | string;

export interface HooklineClientOptions {
  /**
   * Where the Hookline server answers, e.g. `https://hookline.example.com`. A path prefix is kept
   * (`https://example.com/hookline` + `/v1/webhook`); a trailing slash is ignored.
   */
  baseUrl: string | URL;
  /** The project's API key, sent as `authorization: Bearer <apiKey>` on every request. */
  apiKey: string;
  /**
   * The fetch implementation, for runtimes without a global one, instrumentation or tests.
   * Resolved at each request when not given, so a later stub of `globalThis.fetch` is honoured.
   * @default globalThis.fetch
   */
  fetch?: typeof fetch;
}

/** Per-call options accepted as the last argument of every client method. */
export interface RequestOptions {
  /** Aborts the request (and, for `listDeliveries`, every later page); the fetch's abort error propagates. */
  signal?: AbortSignal;
}

export interface ConfigureWebhookInput {
  /** Absolute URL that deliveries are POSTed to. */
  callbackUrl: string;
  /** `paused` holds matching deliveries in `pending` until the status is `active` again. */
  status: WebhookConfigStatus;
  /** Which event types are delivered; a non-empty set of the reserved types. */
  eventTypes: readonly EventType[];
  /**
   * Headers sent with every delivery (at most 20), not covered by the signature. Not allowed:
   * `webhook-*`, `content-type`, `content-length`, `host` and hop-by-hop headers; no CR or LF.
   * A PUT replaces the whole configuration: leaving this out clears them.
   * @default {}
   */
  headers?: Readonly<Record<string, string>>;
  /**
   * Deliver only events whose envelope matches this rule; others get `deliveryId: null`. See
   * `PayloadFilter`. Leaving it out (or `null`) delivers every event of `eventTypes`.
   * @default null
   */
  filter?: PayloadFilter | null;
  /**
   * Receives Hookline's operational events about the project, signed with the operational secret
   * (`getSecret().operationalSecret`): `hookline.endpoint.disabled`, `hookline.endpoint.recovered`
   * and `hookline.delivery.dead_lettered`, each an envelope `{version, id, type, data, timestamp}`.
   * @default null
   */
  operationalUrl?: string | null;
  /**
   * `fifo`: the endpoint receives the project's deliveries in ingest order, one at a time; a failing
   * delivery holds back the ones behind it through its retries, until it succeeds or dead-letters.
   * Throughput is then one delivery per round trip to the receiver.
   * @default 'unordered'
   */
  ordering?: DeliveryOrdering;
  /**
   * Attempts in flight to the endpoint at most: a whole number from 1 to the node's
   * `HOOKLINE_ENDPOINT_CONCURRENCY` (default 50). Leaving it out (or `null`): that setting alone.
   * @default null
   */
  maxConcurrency?: number | null;
  /**
   * Attempts started per second at most, 1 to 100,000; any one-second window sees at most
   * rate + rate/50 (a recovering endpoint gets its backlog at this pace). Applies to `fifo` too.
   * Leaving it out (or `null`): no pacing.
   * @default null
   */
  rateLimitPerSecond?: number | null;
  /**
   * The project's own retry schedule, in the format of `HOOKLINE_RETRY_SCHEDULE`: the delay before
   * each attempt of a round (`"0,5s,5m,30m,2h"`; units ms, s, m, h, d), its length the attempts per
   * round; at most 50 delays of at most 30 days each. Deliveries made and rounds (retry, redrive,
   * replay) started after the call follow it. Leaving it out (or `null`): the node's schedule.
   * @default null
   */
  retrySchedule?: string | null;
  /**
   * Each attempt carries the W3C `traceparent` header of its span, which is not covered by the
   * signature (like `headers`). Only while the node exports traces (`OTEL_EXPORTER_OTLP_ENDPOINT`).
   * @default false
   */
  sendTraceparent?: boolean;
}

/** How deliveries go out: concurrently (`unordered`), or one at a time in ingest order (`fifo`). */
export type DeliveryOrdering = 'unordered' | 'fifo';

/**
 * A payload filter rule, a JSON object whose keys are ANDed. A key is a path into the envelope
 * (`type`, `metadata.<key>`, `data.<key>[.<key>…]`) mapped to a plain value (equality) or to an
 * object of operators: `$in` (list), `$exists` (boolean), `$gt` `$gte` `$lt` `$lte` (a number or an
 * ISO 8601 date-time), `$prefix` (string); or `$and` / `$or` (lists of rules), `$not` (a rule).
 * At most 8 levels deep and 4,096 bytes. Example: `{ "data.amount": { "$gte": 100 }, "$or": [{ "metadata.tenant_id": "acme" }, { "type": "service.trigger.disabled" }] }`.
 */
export type PayloadFilter = { readonly [key: string]: unknown };

export interface WebhookConfig {
  callbackUrl: string;
  status: WebhookStatus;
  eventTypes: EventType[];
  /** Why Hookline disabled the endpoint (e.g. `the endpoint answered 410 Gone`); `null` unless `status` is `disabled`. */
  disabledReason: string | null;
  /** Sent with every delivery, as set; `{}` when none. */
  headers: Record<string, string>;
  /** The payload filter as set; `null` when every event of `eventTypes` is delivered. */
  filter: PayloadFilter | null;
  ordering: DeliveryOrdering;
  /** Where operational events go; `null` when none. */
  operationalUrl: string | null;
  /** Attempts in flight to the endpoint at most, as set; `null`: the node's `HOOKLINE_ENDPOINT_CONCURRENCY` alone. */
  maxConcurrency: number | null;
  /** Attempts started per second at most, as set; `null`: no pacing. */
  rateLimitPerSecond: number | null;
  /** The project's retry schedule as set, each delay in its largest whole unit (`"0,90s,2h"`); `null`: the node's `HOOKLINE_RETRY_SCHEDULE`. */
  retrySchedule: string | null;
  /** Whether each attempt carries its span's `traceparent` header (not signed), while the node exports traces. */
  sendTraceparent: boolean;
  /** The endpoint's circuit breaker, as the node serving the project holds it. */
  circuit: EndpointCircuit;
  createdAt: string;
  updatedAt: string;
}

/**
 * An endpoint's circuit breaker. `open`: after `HOOKLINE_CIRCUIT_FAILURES` failures in a row (no
 * answer, 5xx, 429), due attempts are failed without being sent (their attempt log says
 * `circuit_open`) until `nextProbeAt`, when one is sent as the probe (`half_open`); its success
 * closes the circuit. Held in memory: closed again after a restart or a partition move.
 */
export interface EndpointCircuit {
  state: 'closed' | 'open' | 'half_open';
  consecutiveFailures: number;
  /** When it opened; `null` while closed. */
  openedAt: string | null;
  /** From when the next due attempt is sent as the probe; `null` while closed. */
  nextProbeAt: string | null;
}

export interface WebhookSecret {
  /** The current signing secret, `whsec_<base64>`. */
  secret: string;
  /** Signs the operational events; present while `operationalUrl` is set. */
  operationalSecret?: string;
}

export interface RotateSecretInput {
  /**
   * How long the earlier secrets keep signing alongside the new one, at most (an older one whose
   * grace ends sooner keeps its end); `0` drops them all at once.
   * @default 86400 (server side)
   */
  graceSeconds?: number;
}

export interface RotatedSecret {
  /** The new signing secret, `whsec_<base64>`. */
  secret: string;
  /** When the previous secret stops signing. */
  previousSecretExpiresAt: string;
}

export interface SendEventInput {
  /**
   * Idempotency key and event id, `^evt_[A-Za-z0-9_-]{1,100}$`. The same id with the same body
   * answers the first result again; with a different body, a 409 `event_id_conflict`.
   * @default generated by the server
   */
  id?: string;
  type: EventType;
  /** The event payload, a JSON object. */
  data: object;
  /** @default {} */
  metadata?: EventMetadata;
  /**
   * When the event happened; the envelope shows it with a numeric offset (`Z` becomes `+00:00`).
   * @default the ingest time
   */
  timestamp?: DateInput;
}

export interface SendEventResult {
  /** The event id, the given one or the one the server made. */
  id: string;
  /** The delivery made for the event; `null` when no webhook is configured or the type is not subscribed. */
  deliveryId: string | null;
  /** `true` when the server already had this event id (HTTP 200) and answered its first result. */
  duplicate: boolean;
}

/**
 * One event's outcome in `sendEvents`, in request order: stored or a repeat (as `sendEvent` answers),
 * or refused with the error `sendEvent` would have thrown for that event alone.
 */
export type SendEventsItem =
  | ({ ok: true } & SendEventResult)
  | { ok: false; error: HooklineApiError };

export interface LastAttempt {
  at: string;
  /** `null` when no response came back (timeout, network error). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

export interface Delivery {
  id: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  /** Every attempt so far, across retries and redrives. */
  attempts: number;
  /** Attempts per round; a retry or redrive of a dead letter starts a new round. */
  maxAttempts: number;
  /** `null` when no attempt is scheduled. */
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** `null` before the first attempt. */
  lastAttempt: LastAttempt | null;
}

export interface AttemptLogEntry {
  /** Which attempt this was; attempts are counted across retry and redrive rounds. */
  attempt: number;
  at: string;
  /** `null` when no response came back (timeout, network error). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** Stable class of a failure (`http_status`, `timeout`, `connection_refused`, `blocked_address`, …); null on success. */
  errorCode: string | null;
  /** The first 1 KB of the receiver's answer as text; `''` when it sent no body or never answered. */
  responseBody: string;
}

/** A state of the delivery machine as recorded in `transitions`: the statuses plus the transient `failed`. */
export type DeliveryMachineState = DeliveryStatus | 'failed';

export interface DeliveryTransition {
  /** `null` for the creation of the delivery. */
  from: DeliveryMachineState | null;
  to: DeliveryMachineState;
  /** The machine event that caused the transition. */
  event: string;
  at: string;
}

export interface DeliveryDetail extends Delivery {
  attemptLog: AttemptLogEntry[];
  transitions: DeliveryTransition[];
}

export interface DeliveryListFilter {
  status?: DeliveryStatus;
  eventType?: EventType;
  eventId?: string;
  /** Inclusive lower bound on `createdAt`. */
  since?: DateInput;
  /** Exclusive upper bound on `createdAt`. */
  until?: DateInput;
  /**
   * Page size, 1–250. With `listDeliveries` it sizes each page, it does not cap the total:
   * stop iterating (`break`) to stop fetching.
   * @default 50 (server side)
   */
  limit?: number;
}

export interface DeliveryPageQuery extends DeliveryListFilter {
  /** The `nextCursor` of the previous page; omit for the newest page. */
  cursor?: string;
}

export interface DeliveryPage {
  /** Newest first by `createdAt`, ties by `id` descending. */
  data: Delivery[];
  /** `null` on the last page. */
  nextCursor: string | null;
}

export interface EventListFilter {
  eventType?: EventType;
  /**
   * Page size, 1–250. With `listEvents` it sizes each page, it does not cap the total: stop
   * iterating (`break`) to stop fetching.
   * @default 50 (server side)
   */
  limit?: number;
}

export interface EventPageQuery extends EventListFilter {
  /** The `nextCursor` of the previous page; omit for the newest page. */
  cursor?: string;
}

/** An event as Hookline stored it (`GET /v1/events/:eventId`). */
export interface StoredEvent {
  id: string;
  type: EventType;
  /** When Hookline accepted the event. */
  createdAt: string;
  /** The envelope Hookline signs and sends, parsed. */
  payload: Record<string, unknown>;
  /** The same envelope as the exact text signed and sent: its UTF-8 bytes are the request body. */
  body: string;
}

export interface EventPage {
  /** Newest first by `id` (ids Hookline makes sort by acceptance time). */
  data: StoredEvent[];
  /** `null` on the last page. */
  nextCursor: string | null;
}

/**
 * An event from NATS that Hookline could not accept (`GET /v1/logs/rejected-events`): it was
 * terminated at the source and kept here for diagnosis.
 */
export interface RejectedEvent {
  /** `rej_…`, sorting by the time it was rejected. */
  id: string;
  projectId: string;
  /** Where it came from, e.g. `nats:hookline.events.default#42` (subject and stream sequence). */
  source: string;
  /** The error code it would have got over HTTP, e.g. `validation_failed`. */
  reason: string;
  message: string;
  details: Array<{ path?: string; message: string; [key: string]: unknown }>;
  receivedAt: string;
  /** The first bytes of the payload as text. */
  payload: string;
}

export interface RejectedEventListFilter {
  /**
   * Page size, 1–250. With `listRejectedEvents` it sizes each page, it does not cap the total: stop
   * iterating (`break`) to stop fetching.
   * @default 50 (server side)
   */
  limit?: number;
}

export interface RejectedEventPageQuery extends RejectedEventListFilter {
  /** The `nextCursor` of the previous page; omit for the newest page. */
  cursor?: string;
}

export interface RejectedEventPage {
  /** Newest first. */
  data: RejectedEvent[];
  /** `null` on the last page. */
  nextCursor: string | null;
}

export interface RedriveFilter {
  /** Inclusive lower bound on `createdAt`. */
  since?: DateInput;
  /** Exclusive upper bound on `createdAt`. */
  until?: DateInput;
  eventType?: EventType;
  /**
   * Only count: answer how many dead letters a redrive with this filter would start now, and change
   * nothing.
   * @default false
   */
  dryRun?: boolean;
}

export interface RedriveResult {
  /** How many dead-lettered deliveries started a new round; 0 on a dry run. */
  redriven: number;
  /** On a dry run, how many a redrive with the same filter would start now; `null` on a real redrive. */
  wouldRedrive: number | null;
  /**
   * On a dry run, whether those fit in the room HOOKLINE_MAX_WAITING_PER_PROJECT leaves the project now
   * (a redrive that does not fit is refused whole: `HooklineApiError` 503 `overloaded`). Absent on a
   * real redrive, and from a server too old to say.
   */
  fits?: boolean;
}

/** Readings of `GET /v1/stats/delivery-states`: cheap counts, safe to poll every few seconds. */
export interface DeliveryStats {
  /** How many of the project's deliveries are in each status now. */
  counts: Record<DeliveryStatus, number>;
}

export interface CreatePortalLinkInput {
  /**
   * How long the link opens the dashboard: a duration such as `30m`, `1h` or `7d`, from `1s` to `7d`.
   * @default "1h" (server side)
   */
  expiresIn?: string;
  /**
   * A read-only link can look but not change anything: its writes answer 403 `forbidden`.
   * @default false (server side)
   */
  readOnly?: boolean;
}

export interface PortalLink {
  /** Opens the dashboard for the project without its API key; the token is in the fragment. Shown once. */
  url: string;
  /** When the link, and every session it opened, ends. */
  expiresAt: string;
}

export interface PortalLinksRevoked {
  /** How many of the project's links were still live. */
  revoked: number;
}

/** What the credential of a client is: an API key (`expiresAt: null`) or a portal link's token. */
export interface PortalSession {
  projectId: string;
  readOnly: boolean;
  expiresAt: string | null;
}

export interface ReplayResult {
  /** The new delivery of the stored event. */
  deliveryId: string;
}
