/**
 * The one error the SDK client throws for a request that got no usable answer: a non-2xx answer, a
 * 2xx that is not JSON, or no answer at all (`network_error`: connection refused or reset, DNS
 * failure, TLS failure), so callers branch on `code` alone. The fetch implementation's own error
 * stays reachable as `cause` (undici's `UND_ERR_*`, `ECONNREFUSED`, …). Aborts are not wrapped: an
 * aborted call rejects with the signal's own reason, as the caller asked.
 */

/**
 * `code` of an answer that was 2xx but not the JSON the contract promises (a proxy's HTML page, a
 * truncated body). Any other code comes from the server's error body, or is `http_<status>`.
 */
export const INVALID_RESPONSE_CODE = 'invalid_response';

/** `code` of a request that got no HTTP answer at all; `status` is then 0. */
export const NETWORK_ERROR_CODE = 'network_error';

export interface HooklineApiErrorInit {
  status: number;
  code: string;
  message: string;
  details?: readonly unknown[];
  /** Seconds the server asked the caller to wait (its `Retry-After`). @default null */
  retryAfterSeconds?: number | null;
  cause?: unknown;
}

export class HooklineApiError extends Error {
  override readonly name = 'HooklineApiError';
  /** The HTTP status of the answer; 0 for `network_error` (no answer came). */
  readonly status: number;
  /**
   * The server's snake_case error code (`webhook_not_configured`, `delivery_succeeded`, …);
   * `http_<status>` when the body was not a Hookline error; `invalid_response` for an unusable 2xx;
   * `network_error` when no answer came.
   */
  readonly code: string;
  /** The server's `details` array (e.g. validation issues); empty when it sent none. */
  readonly details: readonly unknown[];
  /**
   * Seconds to wait before sending the same request again, from the answer's `Retry-After` header
   * (Hookline sends it with 429 `rate_limited` and every 503); `null` when the answer had none.
   */
  readonly retryAfterSeconds: number | null;

  constructor(init: HooklineApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
  }

  /** Whether the same request may succeed later unchanged: 408, 429, 5xx and `network_error`. */
  get retryable(): boolean {
    return this.code === NETWORK_ERROR_CODE || this.status === 408 || this.status === 429 || this.status >= 500;
  }

  /** Builds the error for a non-2xx answer from its status, raw body text and `Retry-After` header. */
  static fromResponse(status: number, statusText: string, bodyText: string, retryAfter?: string | null): HooklineApiError {
    const retryAfterSeconds = parseRetryAfter(retryAfter);
    const body = parseErrorBody(bodyText);
    if (body) return new HooklineApiError({ status, retryAfterSeconds, ...body });
    return new HooklineApiError({
      status,
      code: `http_${status}`,
      message: statusText ? `HTTP ${status} ${statusText}` : `HTTP ${status}`,
      retryAfterSeconds,
    });
  }
}

/**
 * True for a `HooklineApiError`, also one thrown by another copy of the SDK (two bundles, a
 * dual-package install) where `instanceof` fails.
 */
export function isHooklineApiError(error: unknown): error is HooklineApiError {
  return (
    error instanceof HooklineApiError ||
    (error instanceof Error &&
      error.name === 'HooklineApiError' &&
      typeof (error as Partial<HooklineApiError>).code === 'string' &&
      typeof (error as Partial<HooklineApiError>).status === 'number')
  );
}

/**
 * A `Retry-After` value in seconds: delta-seconds as sent, an HTTP date as the whole seconds until
 * it (0 when past); `null` when absent or neither (RFC 9110 10.2.3).
 */
function parseRetryAfter(value: string | null | undefined): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** `{"error":{"code","message","details"}}`, or `null` when the body is anything else. */
function parseErrorBody(text: string): Pick<HooklineApiErrorInit, 'code' | 'message' | 'details'> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(parsed) || !isRecord(parsed.error)) return null;
  const { code, message, details } = parsed.error;
  if (typeof code !== 'string' || code.length === 0) return null;
  return {
    code,
    message: typeof message === 'string' && message.length > 0 ? message : code,
    details: Array.isArray(details) ? details : [],
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
