import { HooklineApiError, INVALID_RESPONSE_CODE, NETWORK_ERROR_CODE } from './errors.js';
import { assertKnownKeys, type KnownKeys } from './options.js';
import type {
  ConfigureWebhookInput,
  DateInput,
  Delivery,
  DeliveryDetail,
  DeliveryListFilter,
  DeliveryPage,
  DeliveryPageQuery,
  DeliveryStats,
  EventListFilter,
  EventPage,
  EventPageQuery,
  CreatePortalLinkInput,
  HooklineClientOptions,
  PortalLink,
  PortalLinksRevoked,
  PortalSession,
  RedriveFilter,
  RedriveResult,
  RejectedEvent,
  RejectedEventListFilter,
  RejectedEventPage,
  RejectedEventPageQuery,
  ReplayResult,
  RequestOptions,
  RotatedSecret,
  RotateSecretInput,
  SendEventInput,
  SendEventResult,
  SendEventsItem,
  StoredEvent,
  WebhookConfig,
  WebhookSecret,
} from './types.js';

type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';
type QueryValue = string | number | Date | undefined;

interface RequestSpec {
  method: HttpMethod;
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON; left out entirely (no body, no content type) when undefined. */
  body?: unknown;
  signal?: AbortSignal | undefined;
}

interface ApiResponse<T> {
  status: number;
  body: T;
}

const DELIVERIES_PATH = '/v1/logs/webhook-deliveries';
const EVENTS_PATH = '/v1/events';

// What each argument may hold (see ./options.ts); the types make each list exhaustive.
const REQUEST_OPTIONS = { signal: true } as const satisfies KnownKeys<RequestOptions>;
const CONFIGURE_WEBHOOK_INPUT = { callbackUrl: true, status: true, eventTypes: true, headers: true, filter: true, ordering: true, operationalUrl: true, maxConcurrency: true, rateLimitPerSecond: true, retrySchedule: true, sendTraceparent: true } as const satisfies KnownKeys<ConfigureWebhookInput>;
const ROTATE_SECRET_INPUT = { graceSeconds: true } as const satisfies KnownKeys<RotateSecretInput>;
const SEND_EVENT_INPUT = { id: true, type: true, data: true, metadata: true, timestamp: true } as const satisfies KnownKeys<SendEventInput>;
const DELIVERY_LIST_FILTER = { status: true, eventType: true, eventId: true, since: true, until: true, limit: true } as const satisfies KnownKeys<DeliveryListFilter>;
const DELIVERY_PAGE_QUERY = { ...DELIVERY_LIST_FILTER, cursor: true } as const satisfies KnownKeys<DeliveryPageQuery>;
const EVENT_LIST_FILTER = { eventType: true, limit: true } as const satisfies KnownKeys<EventListFilter>;
const EVENT_PAGE_QUERY = { ...EVENT_LIST_FILTER, cursor: true } as const satisfies KnownKeys<EventPageQuery>;
const REJECTED_EVENT_LIST_FILTER = { limit: true } as const satisfies KnownKeys<RejectedEventListFilter>;
const REJECTED_EVENT_PAGE_QUERY = { ...REJECTED_EVENT_LIST_FILTER, cursor: true } as const satisfies KnownKeys<RejectedEventPageQuery>;
const CREATE_PORTAL_LINK_INPUT = { expiresIn: true, readOnly: true } as const satisfies KnownKeys<CreatePortalLinkInput>;
const REDRIVE_FILTER = { since: true, until: true, eventType: true, dryRun: true } as const satisfies KnownKeys<RedriveFilter>;

/**
 * Client for the Hookline management API (wire contract v1). Uses only the platform `fetch`, so it
 * runs on Node 20+, browsers and edge runtimes. Every method resolves with the parsed answer or
 * rejects with a `HooklineApiError`: for a non-2xx answer, and with code `network_error` when no
 * answer came. An aborted call rejects with the signal's reason. An option the method does not know
 * is a `TypeError` before anything is sent, never silently dropped.
 */
export class HooklineClient {
  readonly #baseUrl: string;
  readonly #authorization: string;
  readonly #fetch: typeof fetch | undefined;

  constructor(options: HooklineClientOptions) {
    const baseUrl = String(options.baseUrl).replace(/\/+$/, '');
    // Fail at construction, not at the first call far from the configuration mistake.
    if (!isAbsoluteUrl(baseUrl)) throw new TypeError(`HooklineClient: baseUrl is not an absolute URL: ${baseUrl}`);
    if (typeof options.apiKey !== 'string' || options.apiKey.length === 0) {
      throw new TypeError('HooklineClient: apiKey is required');
    }
    if (options.fetch === undefined && typeof globalThis.fetch !== 'function') {
      throw new TypeError('HooklineClient: no global fetch in this runtime; pass options.fetch');
    }
    this.#baseUrl = baseUrl;
    this.#authorization = `Bearer ${options.apiKey}`;
    this.#fetch = options.fetch;
  }

  /**
   * Creates or replaces the project's webhook configuration (`PUT /v1/webhook`). The signing
   * secret is made by the first call and kept by later ones.
   */
  async configureWebhook(input: ConfigureWebhookInput, options?: RequestOptions): Promise<WebhookConfig> {
    checkArguments('configureWebhook', options, ['input', input, CONFIGURE_WEBHOOK_INPUT]);
    const { callbackUrl, status, eventTypes, headers, filter, ordering, operationalUrl, maxConcurrency, rateLimitPerSecond, retrySchedule, sendTraceparent } = input;
    const body = { callbackUrl, status, eventTypes, headers, filter, ordering, operationalUrl, maxConcurrency, rateLimitPerSecond, retrySchedule, sendTraceparent };
    return this.#body<WebhookConfig>({ method: 'PUT', path: '/v1/webhook', body, signal: options?.signal });
  }

  /**
   * The project's webhook configuration (`GET /v1/webhook`).
   * @throws HooklineApiError `webhook_not_configured` (404) before the first `configureWebhook`.
   */
  async getWebhook(options?: RequestOptions): Promise<WebhookConfig> {
    checkArguments('getWebhook', options);
    return this.#body<WebhookConfig>({ method: 'GET', path: '/v1/webhook', signal: options?.signal });
  }

  /** The current signing secret (`GET /v1/webhook/secret`). */
  async getSecret(options?: RequestOptions): Promise<WebhookSecret> {
    checkArguments('getSecret', options);
    return this.#body<WebhookSecret>({ method: 'GET', path: '/v1/webhook/secret', signal: options?.signal });
  }

  /**
   * Makes a new signing secret (`POST /v1/webhook/secret/rotate`). During the grace period both
   * secrets sign, so receivers can switch without rejecting deliveries.
   */
  async rotateSecret(input: RotateSecretInput = {}, options?: RequestOptions): Promise<RotatedSecret> {
    checkArguments('rotateSecret', options, ['input', input, ROTATE_SECRET_INPUT]);
    const body = input.graceSeconds === undefined ? {} : { graceSeconds: input.graceSeconds };
    const path = '/v1/webhook/secret/rotate';
    return this.#body<RotatedSecret>({ method: 'POST', path, body, signal: options?.signal });
  }

  /**
   * Ingests an event (`POST /v1/events`). Safe to repeat with the same `id`: a repeat answers the
   * first result with `duplicate: true` and makes no second delivery.
   * @throws HooklineApiError `event_id_conflict` (409) when the `id` was used with a different body.
   */
  async sendEvent(input: SendEventInput, options?: RequestOptions): Promise<SendEventResult> {
    checkArguments('sendEvent', options, ['input', input, SEND_EVENT_INPUT]);
    const body = eventBody(input);
    const response = await this.#request<{ id: string; deliveryId: string | null }>({
      method: 'POST',
      path: EVENTS_PATH,
      body,
      signal: options?.signal,
    });
    // The contract tells a replayed idempotent answer (200) from a fresh ingest (202) only by status.
    return { id: response.body.id, deliveryId: response.body.deliveryId, duplicate: response.status === 200 };
  }

  /**
   * Ingests 1 to 1,000 events in one commit (`POST /v1/events/batch`), answered once all are stored.
   * Each is de-duplicated by `id` as `sendEvent` is, copies within the batch included. Resolves with
   * one item per event, in order: a refused event is `{ ok: false, error }` while the others are
   * stored. Rejects (nothing stored) when the server refuses the whole batch: too large (413), rate
   * limited (429), draining, overloaded or out of space (503).
   */
  async sendEvents(events: readonly SendEventInput[], options?: RequestOptions): Promise<SendEventsItem[]> {
    if (!Array.isArray(events)) throw new TypeError(`HooklineClient.sendEvents: events must be an array, got ${events === null ? 'null' : typeof events}`);
    events.forEach((input, index) => assertKnownKeys('sendEvents', `events[${index}]`, input, SEND_EVENT_INPUT));
    checkArguments('sendEvents', options);
    const body = { events: events.map(eventBody) };
    const response = await this.#request<{ data: BatchItemAnswer[] }>({ method: 'POST', path: '/v1/events/batch', body, signal: options?.signal });
    return response.body.data.map((item) =>
      'error' in item
        ? { ok: false, error: new HooklineApiError({ status: item.status, code: item.error.code, message: item.error.message, details: item.error.details }) }
        : { ok: true, id: item.id, deliveryId: item.deliveryId, duplicate: item.status === 200 },
    );
  }

  /**
   * Every delivery matching `filter`, newest first, following `nextCursor` page by page. Lazy: a
   * page is fetched only when iteration reaches it, so `break` stops fetching. Each `for await`
   * starts again from the newest page.
   */
  listDeliveries(filter: DeliveryListFilter = {}, options: RequestOptions = {}): AsyncIterable<Delivery> {
    // Checked here, not at the first page: the mistake surfaces at the call that made it.
    checkArguments('listDeliveries', options, ['filter', filter, DELIVERY_LIST_FILTER]);
    return lazyPages(filter, (query) => this.listDeliveriesPage(query, options));
  }

  /** One page of deliveries (`GET /v1/logs/webhook-deliveries`); pass `nextCursor` back as `cursor`. */
  async listDeliveriesPage(query: DeliveryPageQuery = {}, options?: RequestOptions): Promise<DeliveryPage> {
    checkArguments('listDeliveriesPage', options, ['query', query, DELIVERY_PAGE_QUERY]);
    const { status, eventType, eventId, since, until, limit, cursor } = query;
    const response = await this.#request<DeliveryPage>({
      method: 'GET',
      path: DELIVERIES_PATH,
      query: { status, eventType, eventId, since, until, limit, cursor },
      signal: options?.signal,
    });
    return { data: response.body.data, nextCursor: response.body.nextCursor ?? null };
  }

  /** One delivery with its attempt log and state transitions (`GET /v1/logs/webhook-deliveries/:id`). */
  async getDelivery(id: string, options?: RequestOptions): Promise<DeliveryDetail> {
    checkArguments('getDelivery', options);
    const path = `${DELIVERIES_PATH}/${encodeURIComponent(id)}`;
    return this.#body<DeliveryDetail>({ method: 'GET', path, signal: options?.signal });
  }

  /**
   * Retries one delivery (`POST /v1/logs/webhook-deliveries/:id/retry`): a dead letter starts a new
   * round of attempts, a `retrying` delivery becomes due now. Answers the delivery as the retry left
   * it: `pending` (a dead letter) or `retrying` with `nextAttemptAt` now.
   * @throws HooklineApiError `delivery_succeeded` or `delivery_in_progress` (409).
   */
  async retryDelivery(id: string, options?: RequestOptions): Promise<Delivery> {
    checkArguments('retryDelivery', options);
    const path = `${DELIVERIES_PATH}/${encodeURIComponent(id)}/retry`;
    return this.#body<Delivery>({ method: 'POST', path, signal: options?.signal });
  }

  /**
   * Starts a new round of attempts for every dead-lettered delivery matching `filter`
   * (`POST /v1/logs/webhook-deliveries/redrive`); no filter redrives them all. With `dryRun: true`
   * it changes nothing and answers in `wouldRedrive` how many it would start now, and in `fits`
   * whether they fit under HOOKLINE_MAX_WAITING_PER_PROJECT. A redrive that does not fit is refused
   * whole (503 `overloaded`, nothing redriven): narrow the filter or wait.
   */
  async redriveDeadLetters(filter: RedriveFilter = {}, options?: RequestOptions): Promise<RedriveResult> {
    checkArguments('redriveDeadLetters', options, ['filter', filter, REDRIVE_FILTER]);
    const body = {
      since: filter.since === undefined ? undefined : toIsoString(filter.since),
      until: filter.until === undefined ? undefined : toIsoString(filter.until),
      eventType: filter.eventType,
      dryRun: filter.dryRun,
    };
    const path = `${DELIVERIES_PATH}/redrive`;
    const answer = await this.#body<{ redriven: number; wouldRedrive?: number; fits?: boolean }>({ method: 'POST', path, body, signal: options?.signal });
    return { redriven: answer.redriven, wouldRedrive: answer.wouldRedrive ?? null, ...(answer.fits !== undefined ? { fits: answer.fits } : {}) };
  }

  /** How many of the project's deliveries are in each status now (`GET /v1/stats/delivery-states`). */
  async getStats(options?: RequestOptions): Promise<DeliveryStats> {
    checkArguments('getStats', options);
    return this.#body<DeliveryStats>({ method: 'GET', path: '/v1/stats/delivery-states', signal: options?.signal });
  }

  /**
   * Makes a link that opens the dashboard for this project without the API key, until it expires
   * (`POST /v1/portal-links`). Needs the API key: a portal link cannot make links.
   */
  async createPortalLink(input: CreatePortalLinkInput = {}, options?: RequestOptions): Promise<PortalLink> {
    checkArguments('createPortalLink', options, ['input', input, CREATE_PORTAL_LINK_INPUT]);
    return this.#body<PortalLink>({ method: 'POST', path: '/v1/portal-links', body: input, signal: options?.signal });
  }

  /** Revokes every portal link of the project (`DELETE /v1/portal-links`); their sessions end at their next call. */
  async revokePortalLinks(options?: RequestOptions): Promise<PortalLinksRevoked> {
    checkArguments('revokePortalLinks', options);
    return this.#body<PortalLinksRevoked>({ method: 'DELETE', path: '/v1/portal-links', signal: options?.signal });
  }

  /** The project of this client's credential, and when it ends if it is a portal link's (`GET /v1/portal-session`). */
  async getPortalSession(options?: RequestOptions): Promise<PortalSession> {
    checkArguments('getPortalSession', options);
    return this.#body<PortalSession>({ method: 'GET', path: '/v1/portal-session', signal: options?.signal });
  }

  /**
   * Delivers a stored event again as a new delivery (`POST /v1/events/:eventId/replay`): the same
   * envelope bytes, to the current callback URL, signed with the current secrets, whatever
   * `eventTypes` says now.
   */
  async replayEvent(eventId: string, options?: RequestOptions): Promise<ReplayResult> {
    checkArguments('replayEvent', options);
    const path = `/v1/events/${encodeURIComponent(eventId)}/replay`;
    return this.#body<ReplayResult>({ method: 'POST', path, signal: options?.signal });
  }

  /**
   * Every stored event matching `filter` with its envelope, newest first, following `nextCursor`
   * page by page; lazy like `listDeliveries`.
   */
  listEvents(filter: EventListFilter = {}, options: RequestOptions = {}): AsyncIterable<StoredEvent> {
    checkArguments('listEvents', options, ['filter', filter, EVENT_LIST_FILTER]);
    return lazyPages(filter, (query) => this.listEventsPage(query, options));
  }

  /** One page of stored events (`GET /v1/events`); pass `nextCursor` back as `cursor`. */
  async listEventsPage(query: EventPageQuery = {}, options?: RequestOptions): Promise<EventPage> {
    checkArguments('listEventsPage', options, ['query', query, EVENT_PAGE_QUERY]);
    const { eventType, limit, cursor } = query;
    const response = await this.#request<EventPage>({ method: 'GET', path: EVENTS_PATH, query: { eventType, limit, cursor }, signal: options?.signal });
    return { data: response.body.data, nextCursor: response.body.nextCursor ?? null };
  }

  /** One stored event with its envelope (`GET /v1/events/:eventId`). @throws HooklineApiError `event_not_found` (404). */
  async getEvent(eventId: string, options?: RequestOptions): Promise<StoredEvent> {
    checkArguments('getEvent', options);
    return this.#body<StoredEvent>({ method: 'GET', path: `${EVENTS_PATH}/${encodeURIComponent(eventId)}`, signal: options?.signal });
  }

  /**
   * Every event from NATS that Hookline rejected for this project (invalid, or too large), newest
   * first, following `nextCursor` page by page; lazy like `listDeliveries`.
   */
  listRejectedEvents(filter: RejectedEventListFilter = {}, options: RequestOptions = {}): AsyncIterable<RejectedEvent> {
    checkArguments('listRejectedEvents', options, ['filter', filter, REJECTED_EVENT_LIST_FILTER]);
    return lazyPages(filter, (query) => this.listRejectedEventsPage(query, options));
  }

  /** One page of rejected events (`GET /v1/logs/rejected-events`); pass `nextCursor` back as `cursor`. */
  async listRejectedEventsPage(query: RejectedEventPageQuery = {}, options?: RequestOptions): Promise<RejectedEventPage> {
    checkArguments('listRejectedEventsPage', options, ['query', query, REJECTED_EVENT_PAGE_QUERY]);
    const { limit, cursor } = query;
    const response = await this.#request<RejectedEventPage>({ method: 'GET', path: '/v1/logs/rejected-events', query: { limit, cursor }, signal: options?.signal });
    return { data: response.body.data, nextCursor: response.body.nextCursor ?? null };
  }

  async #body<T>(spec: RequestSpec): Promise<T> {
    return (await this.#request<T>(spec)).body;
  }

  async #request<T>(spec: RequestSpec): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { accept: 'application/json', authorization: this.#authorization };
    const init: RequestInit = { method: spec.method, headers };
    if (spec.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(spec.body);
    }
    if (spec.signal) init.signal = spec.signal;

    // Called unbound: some runtimes throw "Illegal invocation" when fetch runs with a foreign `this`.
    const fetchImpl = this.#fetch ?? globalThis.fetch;
    const url = this.#url(spec.path, spec.query);
    let response: Response;
    let text: string;
    try {
      response = await fetchImpl(url, init);
      // Inside the try: a connection reset while the body streams is a network failure as well.
      text = await response.text();
    } catch (cause) {
      throw networkError(spec, url, cause);
    }
    if (!response.ok) throw HooklineApiError.fromResponse(response.status, response.statusText, text, response.headers.get('retry-after'));
    try {
      return { status: response.status, body: JSON.parse(text) as T };
    } catch (cause) {
      throw new HooklineApiError({
        status: response.status,
        code: INVALID_RESPONSE_CODE,
        message: `HTTP ${response.status} answer to ${spec.method} ${spec.path} is not JSON`,
        cause,
      });
    }
  }

  #url(path: string, query: Record<string, QueryValue> | undefined): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined) continue;
      params.set(key, value instanceof Date ? value.toISOString() : String(value));
    }
    const search = params.toString();
    return `${this.#baseUrl}${path}${search ? `?${search}` : ''}`;
  }
}

/**
 * The items of every page matching `filter`, fetching the next page (by the previous `nextCursor`)
 * only when iteration reaches it; each `for await` starts again from the first page. The filter is
 * copied, so that changing the caller's object mid-iteration cannot change later pages' query.
 */
function lazyPages<F extends object, T>(filter: F, page: (query: F & { cursor: string | undefined }) => Promise<{ data: T[]; nextCursor: string | null }>): AsyncIterable<T> {
  const query = { ...filter };
  return {
    async *[Symbol.asyncIterator]() {
      let cursor: string | undefined;
      do {
        const next = await page({ ...query, cursor });
        yield* next.data;
        cursor = next.nextCursor ?? undefined;
      } while (cursor !== undefined);
    },
  };
}

/**
 * Checks `options` (every method's last argument) and the method's other option objects, each
 * `[argument name, value, known keys]`; `undefined` stands for a defaulted argument.
 */
function checkArguments(method: string, options: RequestOptions | undefined, ...objects: [string, unknown, Readonly<Record<string, true>>][]): void {
  for (const [argument, value, known] of objects) assertKnownKeys(method, argument, value, known);
  if (options !== undefined) assertKnownKeys(method, 'options', options, REQUEST_OPTIONS);
}

/**
 * The `network_error` for a fetch that got no answer; an abort is passed through untouched, since
 * the caller asked for it. fetch's own message is a bare "fetch failed": the reason (ECONNREFUSED,
 * ENOTFOUND, a reset) is on `cause`, so it is put in the message.
 */
function networkError(spec: RequestSpec, url: string, error: unknown): unknown {
  if (spec.signal?.aborted) return error;
  const reason = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const detail = reason instanceof Error ? reason.message || (reason as { code?: unknown }).code || reason.name : String(reason);
  return new HooklineApiError({ status: 0, code: NETWORK_ERROR_CODE, message: `${spec.method} ${url} got no answer: ${String(detail)}`, cause: error });
}

// `URL.canParse` is too recent for some browsers the SDK targets.
function isAbsoluteUrl(value: string): boolean {
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

/** One event as both ingest routes take it. */
function eventBody(input: SendEventInput) {
  return {
    id: input.id,
    type: input.type,
    data: input.data,
    metadata: input.metadata,
    timestamp: input.timestamp === undefined ? undefined : toIsoString(input.timestamp),
  };
}

/** One element of a batch answer's `data`. */
type BatchItemAnswer =
  | { status: number; id: string; deliveryId: string | null }
  | { status: number; error: { code: string; message: string; details?: unknown[] } };

function toIsoString(value: DateInput): string {
  return value instanceof Date ? value.toISOString() : value;
}
