import { HooklineApiError, INVALID_RESPONSE_CODE } from './errors.js';
import type {
  ConfigureWebhookInput,
  DateInput,
  Delivery,
  DeliveryDetail,
  DeliveryListFilter,
  DeliveryPage,
  DeliveryPageQuery,
  HooklineClientOptions,
  RedriveFilter,
  RedriveResult,
  ReplayResult,
  RequestOptions,
  RotatedSecret,
  RotateSecretInput,
  SendEventInput,
  SendEventResult,
  WebhookConfig,
  WebhookSecret,
} from './types.js';

type HttpMethod = 'GET' | 'PUT' | 'POST';
type QueryValue = string | number | Date | undefined;

interface RequestSpec {
  method: HttpMethod;
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON. Left out entirely when undefined: an empty body labelled JSON is a 400 on Fastify. */
  body?: unknown;
  signal?: AbortSignal | undefined;
}

interface ApiResponse<T> {
  status: number;
  body: T;
}

const DELIVERIES_PATH = '/v1/logs/webhook-deliveries';

/**
 * Client for the Hookline management API (wire contract v1). Uses only the platform `fetch`, so it
 * runs on Node 20+, browsers and edge runtimes. Every method resolves with the parsed answer or
 * rejects with a `HooklineApiError` for a non-2xx answer; network errors and aborts propagate as
 * thrown by `fetch`.
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
    const { callbackUrl, status, eventTypes } = input;
    const body = { callbackUrl, status, eventTypes };
    return this.#body<WebhookConfig>({ method: 'PUT', path: '/v1/webhook', body, signal: options?.signal });
  }

  /**
   * The project's webhook configuration (`GET /v1/webhook`).
   * @throws HooklineApiError `webhook_not_configured` (404) before the first `configureWebhook`.
   */
  async getWebhook(options?: RequestOptions): Promise<WebhookConfig> {
    return this.#body<WebhookConfig>({ method: 'GET', path: '/v1/webhook', signal: options?.signal });
  }

  /** The current signing secret (`GET /v1/webhook/secret`). */
  async getSecret(options?: RequestOptions): Promise<WebhookSecret> {
    return this.#body<WebhookSecret>({ method: 'GET', path: '/v1/webhook/secret', signal: options?.signal });
  }

  /**
   * Makes a new signing secret (`POST /v1/webhook/secret/rotate`). During the grace period both
   * secrets sign, so receivers can switch without rejecting deliveries.
   */
  async rotateSecret(input: RotateSecretInput = {}, options?: RequestOptions): Promise<RotatedSecret> {
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
    const body = {
      id: input.id,
      type: input.type,
      data: input.data,
      metadata: input.metadata,
      timestamp: input.timestamp === undefined ? undefined : toIsoString(input.timestamp),
    };
    const response = await this.#request<{ id: string; deliveryId: string | null }>({
      method: 'POST',
      path: '/v1/events',
      body,
      signal: options?.signal,
    });
    // The contract tells a replayed idempotent answer (200) from a fresh ingest (202) only by status.
    return { id: response.body.id, deliveryId: response.body.deliveryId, duplicate: response.status === 200 };
  }

  /**
   * Every delivery matching `filter`, newest first, following `nextCursor` page by page. Lazy: a
   * page is fetched only when iteration reaches it, so `break` stops fetching. Each `for await`
   * starts again from the newest page.
   */
  listDeliveries(filter: DeliveryListFilter = {}, options: RequestOptions = {}): AsyncIterable<Delivery> {
    // Copied so that changing the caller's object mid-iteration cannot change later pages' query.
    const query: DeliveryListFilter = { ...filter };
    return { [Symbol.asyncIterator]: () => this.#iterateDeliveries(query, options) };
  }

  /** One page of deliveries (`GET /v1/logs/webhook-deliveries`); pass `nextCursor` back as `cursor`. */
  async listDeliveriesPage(query: DeliveryPageQuery = {}, options?: RequestOptions): Promise<DeliveryPage> {
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
    const path = `${DELIVERIES_PATH}/${encodeURIComponent(id)}`;
    return this.#body<DeliveryDetail>({ method: 'GET', path, signal: options?.signal });
  }

  /**
   * Retries one delivery (`POST /v1/logs/webhook-deliveries/:id/retry`): a dead letter starts a new
   * round of attempts, a `retrying` delivery becomes due now. Answers the delivery, now `pending`.
   * @throws HooklineApiError `delivery_succeeded` or `delivery_in_progress` (409).
   */
  async retryDelivery(id: string, options?: RequestOptions): Promise<Delivery> {
    const path = `${DELIVERIES_PATH}/${encodeURIComponent(id)}/retry`;
    return this.#body<Delivery>({ method: 'POST', path, signal: options?.signal });
  }

  /**
   * Starts a new round of attempts for every dead-lettered delivery matching `filter`
   * (`POST /v1/logs/webhook-deliveries/redrive`); no filter redrives them all.
   */
  async redriveDeadLetters(filter: RedriveFilter = {}, options?: RequestOptions): Promise<RedriveResult> {
    const body = {
      since: filter.since === undefined ? undefined : toIsoString(filter.since),
      until: filter.until === undefined ? undefined : toIsoString(filter.until),
      eventType: filter.eventType,
    };
    const path = `${DELIVERIES_PATH}/redrive`;
    return this.#body<RedriveResult>({ method: 'POST', path, body, signal: options?.signal });
  }

  /**
   * Delivers a stored event again as a new delivery (`POST /v1/events/:eventId/replay`): the same
   * envelope bytes, to the current callback URL, signed with the current secrets, whatever
   * `eventTypes` says now.
   */
  async replayEvent(eventId: string, options?: RequestOptions): Promise<ReplayResult> {
    const path = `/v1/events/${encodeURIComponent(eventId)}/replay`;
    return this.#body<ReplayResult>({ method: 'POST', path, signal: options?.signal });
  }

  async *#iterateDeliveries(filter: DeliveryListFilter, options: RequestOptions): AsyncGenerator<Delivery, void> {
    let cursor: string | undefined;
    do {
      const page = await this.listDeliveriesPage({ ...filter, cursor }, options);
      yield* page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
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
    const response = await fetchImpl(this.#url(spec.path, spec.query), init);
    const text = await response.text();
    if (!response.ok) throw HooklineApiError.fromResponse(response.status, response.statusText, text);
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

// `URL.canParse` is too recent for some browsers the SDK targets.
function isAbsoluteUrl(value: string): boolean {
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

function toIsoString(value: DateInput): string {
  return value instanceof Date ? value.toISOString() : value;
}
