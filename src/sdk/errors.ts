/**
 * The one error the SDK client throws for an answer it cannot use. Network failures and aborts are
 * not wrapped: they propagate as the fetch implementation's own error, so `cause` chains and
 * runtime-specific codes (undici's `UND_ERR_*`, `AbortError`) stay intact.
 */

/**
 * `code` of an answer that was 2xx but not the JSON the contract promises (a proxy's HTML page, a
 * truncated body). Any other code comes from the server's error body, or is `http_<status>`.
 */
export const INVALID_RESPONSE_CODE = 'invalid_response';

export interface HooklineApiErrorInit {
  status: number;
  code: string;
  message: string;
  details?: readonly unknown[];
  cause?: unknown;
}

export class HooklineApiError extends Error {
  override readonly name = 'HooklineApiError';
  /** The HTTP status of the answer. */
  readonly status: number;
  /**
   * The server's snake_case error code (`webhook_not_configured`, `delivery_succeeded`, …);
   * `http_<status>` when the body was not a Hookline error; `invalid_response` for an unusable 2xx.
   */
  readonly code: string;
  /** The server's `details` array (e.g. validation issues); empty when it sent none. */
  readonly details: readonly unknown[];

  constructor(init: HooklineApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
  }

  /** Whether the same request may succeed later unchanged: 408, 429 and 5xx. */
  get retryable(): boolean {
    return this.status === 408 || this.status === 429 || this.status >= 500;
  }

  /** Builds the error for a non-2xx answer from its status and raw body text. */
  static fromResponse(status: number, statusText: string, bodyText: string): HooklineApiError {
    const body = parseErrorBody(bodyText);
    if (body) return new HooklineApiError({ status, ...body });
    return new HooklineApiError({
      status,
      code: `http_${status}`,
      message: statusText ? `HTTP ${status} ${statusText}` : `HTTP ${status}`,
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
