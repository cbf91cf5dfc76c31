/**
 * Every error Hookline reports, in one place. Callers branch on `code`, never on `instanceof`.
 * `apiCode` is the snake_case code in the HTTP error body `{"error":{"code","message","details"}}`;
 * `status` is the HTTP status it maps to; `retryable` says whether the same call may succeed later.
 */
export const ERROR_CODES = {
  HOOKLINE_ERR_VALIDATION: { apiCode: 'validation_failed', status: 400, retryable: false, doc: 'The request body, query or parameters failed validation; `details` lists each problem with its path.' },
  HOOKLINE_ERR_BAD_JSON: { apiCode: 'invalid_json', status: 400, retryable: false, doc: 'The body is not valid JSON.' },
  HOOKLINE_ERR_MALFORMED_REQUEST: { apiCode: 'malformed_request', status: 400, retryable: false, doc: 'The request is not valid HTTP/1.1 (Node\'s parser refused it before any route ran: a bad method, header or framing); fix the client or the proxy in front of Hookline. The connection is closed.' },
  HOOKLINE_ERR_REQUEST_TIMEOUT: { apiCode: 'request_timeout', status: 408, retryable: true, doc: 'The request\'s headers did not arrive within Node\'s headersTimeout (60 s); the connection is closed. Send again.' },
  HOOKLINE_ERR_HEADERS_TOO_LARGE: { apiCode: 'headers_too_large', status: 431, retryable: false, doc: 'The request\'s headers exceed Node\'s limit (16 KB, --max-http-header-size); the connection is closed.' },
  HOOKLINE_ERR_UNAUTHORIZED: { apiCode: 'unauthorized', status: 401, retryable: false, doc: 'Missing or unknown bearer key.' },
  HOOKLINE_ERR_FORBIDDEN: { apiCode: 'forbidden', status: 403, retryable: false, doc: 'A portal link may not make this call: a read-only link makes no change, and portal links are made and revoked with the project\'s API key only.' },
  HOOKLINE_ERR_NOT_FOUND: { apiCode: 'not_found', status: 404, retryable: false, doc: 'No such route or resource for this project.' },
  HOOKLINE_ERR_UNKNOWN_PROJECT: { apiCode: 'unknown_project', status: 404, retryable: false, doc: 'An event named a project this Hookline does not have (NATS subject hookline.events.<projectId>); create it first.' },
  HOOKLINE_ERR_DELIVERY_NOT_FOUND: { apiCode: 'delivery_not_found', status: 404, retryable: false, doc: 'No delivery with that id in this project; a retry also answers it for a succeeded or dead-lettered delivery past HOOKLINE_RETENTION.' },
  HOOKLINE_ERR_EVENT_NOT_FOUND: { apiCode: 'event_not_found', status: 404, retryable: false, doc: 'No stored event with that id in this project.' },
  HOOKLINE_ERR_WEBHOOK_NOT_CONFIGURED: { apiCode: 'webhook_not_configured', status: 404, retryable: false, doc: 'The project has no webhook yet: PUT /v1/webhook first.' },
  HOOKLINE_ERR_NO_WEBHOOK_FOR_REPLAY: { apiCode: 'webhook_not_configured', status: 409, retryable: false, doc: 'Replay needs a configured webhook to deliver to: PUT /v1/webhook first.' },
  HOOKLINE_ERR_EVENT_ID_CONFLICT: { apiCode: 'event_id_conflict', status: 409, retryable: false, doc: 'The event id was already used with a different body.' },
  HOOKLINE_ERR_DELIVERY_IN_PROGRESS: { apiCode: 'delivery_in_progress', status: 409, retryable: true, doc: 'The delivery is pending or being attempted; retry applies to retrying and dead-lettered deliveries.' },
  HOOKLINE_ERR_DELIVERY_SUCCEEDED: { apiCode: 'delivery_succeeded', status: 409, retryable: false, doc: 'The delivery already succeeded; replay the event to send it again.' },
  HOOKLINE_ERR_PAYLOAD_TOO_LARGE: { apiCode: 'payload_too_large', status: 413, retryable: false, doc: 'The body exceeds HOOKLINE_MAX_BODY (HOOKLINE_MAX_BATCH_BODY for POST /v1/events/batch), or an event in a batch exceeds HOOKLINE_MAX_BODY, or (cluster mode) a call to forward to the owning node exceeds NATS max_payload.' },
  HOOKLINE_ERR_ANSWER_TOO_LARGE: { apiCode: 'answer_too_large', status: 502, retryable: false, doc: 'Cluster mode: the owning node\'s answer is larger than NATS max_payload, which carries it to the node you called; ask for a smaller page (`limit`), call the owning node, or raise max_payload.' },
  HOOKLINE_ERR_UNSUPPORTED_MEDIA_TYPE: { apiCode: 'unsupported_media_type', status: 415, retryable: false, doc: 'Send content-type: application/json.' },
  HOOKLINE_ERR_RATE_LIMITED: { apiCode: 'rate_limited', status: 429, retryable: true, doc: 'The project sent more requests (or events in batches) per second than HOOKLINE_RATE_LIMIT allows; wait for Retry-After seconds.' },
  HOOKLINE_ERR_OVERLOADED: { apiCode: 'overloaded', status: 503, retryable: true, doc: 'The project already has HOOKLINE_MAX_WAITING_PER_PROJECT deliveries waiting (its `details` name the project, its waiting count and the limit; other projects are served); nothing was stored (ingest) or changed (retry, redrive, replay). A redrive whose dead letters do not all fit starts none; its `details` say how many it would start (`wouldRedrive`) and how many fit (`room`): narrow it or wait. Send again after Retry-After seconds.' },
  HOOKLINE_ERR_STORAGE_FULL: { apiCode: 'storage_full', status: 503, retryable: true, doc: 'The data directory reached HOOKLINE_MAX_DATA_SIZE or the disk is full; nothing was stored (ingest) or changed (retry, redrive, replay). Free space or raise the limit; delivery of stored events continues.' },
  HOOKLINE_ERR_SHUTTING_DOWN: { apiCode: 'shutting_down', status: 503, retryable: true, doc: 'The node is draining after SIGTERM: it takes no event, retry, redrive, replay or webhook change; send the request again to another node or after restart.' },
  HOOKLINE_ERR_STORAGE: { apiCode: 'storage_unavailable', status: 503, retryable: true, doc: 'The event could not be written durably; nothing was accepted. Try again later.' },
  HOOKLINE_ERR_CONFIG: { apiCode: 'invalid_configuration', status: 500, retryable: false, doc: 'A setting (environment variable or CLI flag) is invalid; the message names it.' },
  HOOKLINE_ERR_DATA_DIR_IN_USE: { apiCode: 'data_dir_in_use', status: 500, retryable: false, doc: 'Another running Hookline owns HOOKLINE_DATA_DIR (the message names its pid); stop it, or give this node its own directory.' },
  HOOKLINE_ERR_NODE_ID_IN_USE: { apiCode: 'node_id_in_use', status: 500, retryable: false, doc: 'Cluster mode: a live node already runs with this HOOKLINE_NODE_ID (the message names its host and pid); give each node its own id, or stop the other first. A node that stalled past a lease and found its id taken over says so on /readyz.' },
  HOOKLINE_ERR_STARTUP: { apiCode: 'startup_failed', status: 500, retryable: false, doc: 'The node could not start: HOOKLINE_PORT is taken, HOOKLINE_HOST does not resolve to a local address, or HOOKLINE_DATA_DIR cannot be created or written. The message names the setting, its value and what to do.' },
  HOOKLINE_ERR_NATS_UNAVAILABLE: { apiCode: 'nats_unavailable', status: 503, retryable: true, doc: 'HOOKLINE_NATS_URL is set but NATS could not be reached or JetStream set up; start NATS (with -js) or unset the variable.' },
  HOOKLINE_ERR_PARTITION_MOVING: { apiCode: 'partition_moving', status: 503, retryable: true, doc: 'Cluster mode: the project\'s partition is changing owner (a node joined or left); retry after Retry-After seconds.' },
  HOOKLINE_ERR_INTERNAL: { apiCode: 'internal_error', status: 500, retryable: true, doc: 'An unexpected failure; the log has the details.' },
} as const;

/**
 * Retry-After of a 503 whose cause names no better time (`shutting_down`: a draining node is gone in
 * about a delivery timeout, and a client behind a load balancer reaches another node sooner).
 */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

export type HooklineErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  path?: string;
  message: string;
  [key: string]: unknown;
}

export class HooklineError extends Error {
  readonly code: HooklineErrorCode;
  readonly status: number;
  readonly apiCode: string;
  readonly retryable: boolean;
  readonly details: ErrorDetail[];
  /** When set, sent as the `Retry-After` header (seconds). */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: HooklineErrorCode, message: string, options: { details?: ErrorDetail[]; cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(message, { cause: options.cause });
    this.name = 'HooklineError';
    this.code = code;
    const entry = ERROR_CODES[code];
    this.status = entry.status;
    this.apiCode = entry.apiCode;
    this.retryable = entry.retryable;
    this.details = options.details ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  toJSON(): { error: { code: string; message: string; details: ErrorDetail[] } } {
    return { error: { code: this.apiCode, message: this.message, details: this.details } };
  }
}

/**
 * Whether the node answering a 5xx with `error` logs it, at error, with its cause and the request id
 * the answer names: an unexpected failure, one that waiting will not fix, and a write that failed
 * (`storage_unavailable`: the operator needs its cause). A refusal that is back-pressure
 * (`overloaded`, `storage_full`, `shutting_down`, `partition_moving`) is not logged per request: its
 * cause is the node's state, not the request, and a line for each refused request would flood the
 * log of a node that is already overloaded.
 */
export function isLoggedWhenAnswered(error: HooklineError): boolean {
  return error.status >= 500 && (error.code === 'HOOKLINE_ERR_INTERNAL' || error.code === 'HOOKLINE_ERR_STORAGE' || !error.retryable);
}

/** What a log line about `error` shows as `err`: for an internal error, what was thrown, which it wraps. */
export function loggedError(error: HooklineError): unknown {
  return error.code === 'HOOKLINE_ERR_INTERNAL' && error.cause !== undefined ? error.cause : error;
}

/**
 * `error` as the answer to request `requestId`: a 5xx names the id, in its message and as
 * `details[0].reqId`, so that an operator handed the answer finds the request in `log` (the line
 * logged under that id when `isLoggedWhenAnswered`; else the request itself, in a proxy's log or a
 * client's report). Below 500, and when it names the id already, `error` is returned as it is.
 */
export function withRequestId(error: HooklineError, requestId: string, log = 'the server log'): HooklineError {
  if (error.status < 500 || error.details[0]?.reqId === requestId) return error;
  const logged = isLoggedWhenAnswered(error);
  const message = logged ? `${error.message}; ${log} has the details under reqId ${requestId}` : `${error.message} (reqId ${requestId})`;
  const detail = logged
    ? { message: `the line with "reqId":"${requestId}" in ${log} has the details`, reqId: requestId }
    : { message: `the id of this request; a refusal to retry is not logged per request in ${log}`, reqId: requestId };
  return new HooklineError(error.code, message, { cause: error.cause, details: [detail, ...error.details], ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}) });
}

/**
 * An unexpected failure of an API request (answered 500). The answer names the request id that
 * the failure's line in `log` carries (`reqId`), so an operator handed the answer finds the line.
 */
export function internalError(cause: unknown, requestId: string, log = 'the server log'): HooklineError {
  return withRequestId(new HooklineError('HOOKLINE_ERR_INTERNAL', 'internal error', { cause }), requestId, log);
}

export function isHooklineError(error: unknown): error is HooklineError {
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string' && (error as { code: string }).code in ERROR_CODES;
}
