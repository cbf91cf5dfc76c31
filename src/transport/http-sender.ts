/**
 * Outbound webhook POSTs. One keep-alive undici `Pool` per receiver origin, made on first use.
 * `send` never throws: every way an attempt can end becomes an `AttemptOutcome` whose `errorCode`
 * the retry policy and the logs can branch on. Redirects are never followed (undici's `dispatch`
 * does not follow them unless a redirect interceptor is installed, and none is).
 */
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { FixedDelayTimers } from '../fixed-delay-timers.js';
import type { TimerEntry } from '../fixed-delay-timers.js';
import { basicAuthorization } from './url-credentials.js';

/** Stable class of a failed attempt. */
export type AttemptErrorCode =
  | 'http_status' | 'timeout' | 'connection_refused' | 'connection_reset' | 'dns'
  | 'tls' | 'invalid_response' | 'redirect' | 'aborted' | 'network' | 'blocked_address';

export interface AttemptOutcome {
  /** True for any 2xx answer whose exchange completed within the timeout. */
  readonly ok: boolean;
  /** The receiver's status; null when no complete answer arrived (timeout, network error). */
  readonly statusCode: number | null;
  readonly durationMs: number;
  /** Short human reason, e.g. `HTTP 503`, `timeout after 15000 ms`; null on success. */
  readonly error: string | null;
  readonly errorCode: AttemptErrorCode | null;
  /** The first `maxResponseBytes` bytes of the answer as UTF-8 text; '' when none. */
  readonly responseBody: string;
  /** `Retry-After` of a 429 or 503 in ms (seconds or HTTP-date form); null otherwise. */
  readonly retryAfterMs: number | null;
}

export interface HttpSenderOptions {
  /** Limit on the whole exchange: connect, request, response headers and the (capped) body. */
  readonly timeoutMs: number;
  /**
   * Most concurrent sockets to one origin, and so most exchanges in flight to it: a send beyond
   * them waits its turn before its timeout starts.
   * @default 50
   */
  readonly maxConnectionsPerOrigin?: number;
  /**
   * How much of each answer is kept; the rest is discarded without buffering.
   * @default 1024
   */
  readonly maxResponseBytes?: number;
  /**
   * How long an idle socket is kept for reuse when the receiver gives no `Keep-Alive` hint.
   * @default 4000 (undici's default)
   */
  readonly keepAliveTimeoutMs?: number;
  /**
   * The SSRF guard: when given, every address a callback host resolves to (and an IP literal host)
   * is checked at connect time, and the attempt fails with `blocked_address` if any is refused.
   * @default undefined (no check)
   */
  readonly isBlockedAddress?: (address: string) => boolean;
}

export interface SendRequest {
  /**
   * Where to POST. Credentials in it (`https://user:pass@host/path`) are sent as
   * `authorization: Basic …`, not in the request line.
   */
  readonly url: string;
  /**
   * Added to `content-type: application/json` and the URL's `authorization`; names are
   * case-insensitive and override both (an explicit `authorization` wins over the URL's). A
   * function is called once, when the exchange starts (a connection of the origin free for it): for
   * headers that say when the request left, as a signature's timestamp does.
   */
  readonly headers: Readonly<Record<string, string>> | (() => Readonly<Record<string, string>>);
  /** Sent as is: the bytes that were signed. */
  readonly body: Uint8Array | string;
  /** Cancels the attempt (outcome `aborted`), e.g. on shutdown. */
  readonly signal?: AbortSignal;
}

const DEFAULT_MAX_CONNECTIONS_PER_ORIGIN = 50;
const DEFAULT_MAX_RESPONSE_BYTES = 1024;
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 4_000;
const BLOCKED_ADDRESS_CODE = 'HOOKLINE_BLOCKED_ADDRESS';
/** Parsed targets kept; past it the cache starts over (a node delivers to about one URL a project). */
const MAX_CACHED_TARGETS = 4_096;

/** A send's URL as the exchange needs it, parsed once per URL string. */
interface Target {
  readonly origin: string;
  /** Path and query: the request line, without the userinfo. */
  readonly path: string;
  /** The host when it is an IP literal (brackets removed), which the SSRF guard judges before connecting. */
  readonly literalHost: string | null;
  /** From the URL's userinfo; null without one. */
  readonly authorization: string | null;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect that resolves every address of the host and refuses the connection
 * when any of them is blocked, so a DNS name cannot smuggle a private address past the guard, and
 * the socket connects to an address that was checked (no second resolution to race).
 */
function guardedLookup(isBlocked: (address: string) => boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const blocked = addresses.find((entry) => isBlocked(entry.address));
      if (blocked || addresses.length === 0) {
        const refusal: NodeJS.ErrnoException = new Error(`${hostname} resolves to ${blocked?.address ?? 'no address'}, which callbacks may not reach (HOOKLINE_ALLOW_PRIVATE_NETWORKS=0)`);
        refusal.code = BLOCKED_ADDRESS_CODE;
        return callback(refusal, []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Exchanges in flight to one origin, and the sends waiting for one of them to end (in order). */
interface OriginTurns {
  inFlight: number;
  readonly waiting: Array<() => void>;
}

export class HttpSender {
  readonly #options: Required<Omit<HttpSenderOptions, 'isBlockedAddress'>>;
  readonly #isBlockedAddress: ((address: string) => boolean) | undefined;
  readonly #pools = new Map<string, Pool>();
  /** Every attempt of an endpoint sends to the same URL string: parsed (and its credentials encoded) once. */
  readonly #targets = new Map<string, Target | string>();
  /**
   * Sends to an origin beyond its connections wait here, not in the pool's queue: there their
   * timeout ran while they waited, so endpoints sharing a slow origin (each with its own
   * `HOOKLINE_ENDPOINT_CONCURRENCY` attempts) had attempts time out that were never sent, and
   * each waiting request held its undici objects meanwhile.
   */
  readonly #turns = new Map<string, OriginTurns>();
  /** Every exchange's timeout, on one timer (they all last `timeoutMs`). */
  readonly #deadlines: FixedDelayTimers;
  #closed = false;

  constructor(options: HttpSenderOptions) {
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
      throw new RangeError(`timeoutMs must be a positive number, got ${options.timeoutMs}`);
    }
    this.#options = {
      timeoutMs: options.timeoutMs,
      maxConnectionsPerOrigin: options.maxConnectionsPerOrigin ?? DEFAULT_MAX_CONNECTIONS_PER_ORIGIN,
      maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
    };
    this.#isBlockedAddress = options.isBlockedAddress;
    this.#deadlines = new FixedDelayTimers(options.timeoutMs);
  }

  async send(request: SendRequest): Promise<AttemptOutcome> {
    const startedAt = performance.now();
    const elapsed = (): number => Math.round(performance.now() - startedAt);

    const target = this.#target(request.url);
    if (typeof target === 'string') {
      return failure(elapsed(), 'network', target);
    }
    if (this.#closed) {
      return failure(elapsed(), 'aborted', 'sender closed');
    }
    const { literalHost } = target;
    if (this.#isBlockedAddress && literalHost !== null && this.#isBlockedAddress(literalHost)) {
      return failure(elapsed(), 'blocked_address', `${literalHost} is an address callbacks may not reach (HOOKLINE_ALLOW_PRIVATE_NETWORKS=0)`);
    }
    // Checked without a promise when a connection is free, as it is but under overload.
    const turn = this.#turn(target.origin, request.signal);
    if (turn === false || (turn !== true && !(await turn))) {
      return failure(elapsed(), 'aborted', 'aborted');
    }
    try {
      return await this.#exchange(target, request);
    } finally {
      this.#endTurn(target.origin);
    }
  }

  /** `url` parsed for sending, or why it cannot be sent to. */
  #target(url: string): Target | string {
    let target = this.#targets.get(url);
    if (target === undefined) {
      if (this.#targets.size >= MAX_CACHED_TARGETS) this.#targets.clear();
      target = parseTarget(url);
      this.#targets.set(url, target);
    }
    return target;
  }

  /**
   * True when a send to `origin` may start now; otherwise a promise of true once it may, or of
   * false when the caller aborted first (a shutdown) or the sender closed meanwhile.
   */
  #turn(origin: string, signal: AbortSignal | undefined): boolean | Promise<boolean> {
    if (signal?.aborted || this.#closed) return false;
    let turns = this.#turns.get(origin);
    if (turns === undefined) this.#turns.set(origin, (turns = { inFlight: 0, waiting: [] }));
    if (turns.inFlight < this.#options.maxConnectionsPerOrigin) {
      turns.inFlight++;
      return true;
    }
    return this.#waitTurn(origin, turns.waiting, signal);
  }

  async #waitTurn(origin: string, waiting: Array<() => void>, signal: AbortSignal | undefined): Promise<boolean> {
    const started = await new Promise<boolean>((resolve) => {
      const go = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      };
      const onAbort = (): void => {
        const index = waiting.indexOf(go);
        if (index !== -1) waiting.splice(index, 1);
        resolve(false);
      };
      waiting.push(go);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    if (!started) return false;
    // Handed over with its slot counted (`#endTurn`): given back when not used.
    if (signal?.aborted || this.#closed) {
      this.#endTurn(origin);
      return false;
    }
    return true;
  }

  /** An exchange to `origin` ended: the next send waiting for it starts (its slot passes on). */
  #endTurn(origin: string): void {
    const turns = this.#turns.get(origin);
    if (turns === undefined) return;
    const next = turns.waiting.shift();
    if (next) return next();
    turns.inFlight--;
    if (turns.inFlight === 0) this.#turns.delete(origin);
  }

  /** One exchange, a connection of the origin free for it: its duration and timeout count from here. */
  #exchange(target: Target, request: SendRequest): Promise<AttemptOutcome> {
    let headers: Record<string, string>;
    try {
      headers = buildHeaders(target.authorization, typeof request.headers === 'function' ? request.headers() : request.headers);
    } catch (error) {
      return Promise.resolve(failure(0, 'network', `the request could not be made: ${error instanceof Error ? error.message : String(error)}`));
    }
    return new Promise((resolve) => {
      const exchange = new Exchange(request, this.#options, this.#deadlines, resolve);
      this.#poolFor(target.origin).dispatch({ method: 'POST', path: target.path, headers, body: request.body }, exchange);
    });
  }

  /** Closes every pool, letting in-flight requests finish; later sends end as `aborted`. */
  async close(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.close()));
  }

  #poolFor(origin: string): Pool {
    let pool = this.#pools.get(origin);
    if (pool === undefined) {
      const { timeoutMs, maxConnectionsPerOrigin, keepAliveTimeoutMs } = this.#options;
      // undici's own timeouts are backstops; the exchange-wide timer in `send` is the contract.
      pool = new Pool(origin, {
        connections: maxConnectionsPerOrigin,
        keepAliveTimeout: keepAliveTimeoutMs,
        connect: { timeout: timeoutMs, ...(this.#isBlockedAddress ? { lookup: guardedLookup(this.#isBlockedAddress) } : {}) },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      this.#pools.set(origin, pool);
    }
    return pool;
  }
}

/**
 * One exchange as undici's dispatch handler: the status, the first `maxResponseBytes` of the body and
 * the outcome are taken straight from the parser's callbacks. undici's `request` made a readable
 * stream of each answer, read through an async iterator, and a promise more.
 *
 * It settles once: at the end of the answer, when the body's prefix is complete (the rest is never
 * buffered: the connection is dropped rather than drained, as draining an unbounded body would
 * defeat the cap), or at the first error, the timeout and the caller's abort included.
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #startedAt = performance.now();
  readonly #signal: AbortSignal | undefined;
  readonly #timeoutMs: number;
  readonly #limit: number;
  readonly #resolve: (outcome: AttemptOutcome) => void;
  readonly #deadlines: FixedDelayTimers;
  readonly #timer: TimerEntry;
  #controller: Dispatcher.DispatchController | null = null;
  /** Why the exchange was ended before undici had started it; applied when it starts. */
  #pendingAbort: Error | null = null;
  #timedOut = false;
  #done = false;
  #statusCode: number | null = null;
  #retryAfterMs: number | null = null;
  readonly #chunks: Buffer[] = [];
  #length = 0;
  /** Made only for a caller that passed a signal: the attempts of the engine pass none. */
  readonly #onCallerAbort: (() => void) | null = null;

  /** Starts the exchange's timeout on `deadlines` (each lasts `options.timeoutMs`). */
  constructor(request: SendRequest, options: { timeoutMs: number; maxResponseBytes: number }, deadlines: FixedDelayTimers, resolve: (outcome: AttemptOutcome) => void) {
    this.#signal = request.signal;
    this.#timeoutMs = options.timeoutMs;
    this.#limit = options.maxResponseBytes;
    this.#resolve = resolve;
    this.#deadlines = deadlines;
    this.#timer = deadlines.add(() => {
      this.#timedOut = true;
      this.#abort(new Error(`timeout after ${this.#timeoutMs} ms`));
    });
    const signal = request.signal;
    if (signal) {
      this.#onCallerAbort = () => this.#abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', this.#onCallerAbort, { once: true });
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#pendingAbort) controller.abort(this.#pendingAbort);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx informational answers come before the final one.
    if (statusCode < 200) return;
    this.#statusCode = statusCode;
    if (statusCode === 429 || statusCode === 503) this.#retryAfterMs = parseRetryAfter(headers['retry-after'], Date.now());
    if (this.#limit === 0) this.#endWithPrefix();
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#done) return;
    const room = this.#limit - this.#length;
    this.#chunks.push(chunk.byteLength > room ? chunk.subarray(0, room) : chunk);
    this.#length += Math.min(chunk.byteLength, room);
    if (this.#length >= this.#limit) this.#endWithPrefix();
  }

  onResponseEnd(): void {
    this.#settle(this.#answer());
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.#done) return;
    const elapsed = this.#elapsed();
    // An answer whose body did not arrive in time is not a complete answer: report no status,
    // but keep the status in the reason for whoever reads the log.
    const during = this.#statusCode === null ? '' : ` (reading body of HTTP ${this.#statusCode})`;
    if (this.#timedOut) return this.#settle(failure(elapsed, 'timeout', `timeout after ${this.#timeoutMs} ms${during}`));
    if (this.#signal?.aborted) return this.#settle(failure(elapsed, 'aborted', `aborted${during}`));
    const [errorCode, reason] = classifyError(error);
    this.#settle(failure(elapsed, errorCode, `${reason}${during}`));
  }

  /** The body's prefix is complete: the answer is known, and the rest of the body is dropped with its connection. */
  #endWithPrefix(): void {
    this.#settle(this.#answer());
    this.#controller?.abort(new Error('response body beyond the kept prefix'));
  }

  #abort(reason: Error): void {
    if (this.#controller) this.#controller.abort(reason);
    else this.#pendingAbort ??= reason;
  }

  #answer(): AttemptOutcome {
    const statusCode = this.#statusCode ?? 0;
    const responseBody = this.#length === 0 ? '' : utf8.decode(this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#length));
    const durationMs = this.#elapsed();
    if (statusCode >= 200 && statusCode < 300) {
      return { ok: true, statusCode, durationMs, error: null, errorCode: null, responseBody, retryAfterMs: null };
    }
    const redirect = statusCode >= 300 && statusCode < 400;
    return {
      ok: false,
      statusCode,
      durationMs,
      error: redirect ? `redirect not followed (HTTP ${statusCode})` : `HTTP ${statusCode}`,
      errorCode: redirect ? 'redirect' : 'http_status',
      responseBody,
      retryAfterMs: this.#retryAfterMs,
    };
  }

  #settle(outcome: AttemptOutcome): void {
    if (this.#done) return;
    this.#done = true;
    this.#deadlines.cancel(this.#timer);
    if (this.#onCallerAbort) this.#signal?.removeEventListener('abort', this.#onCallerAbort);
    this.#resolve(outcome);
  }

  #elapsed(): number {
    return Math.round(performance.now() - this.#startedAt);
  }
}

const utf8 = new TextDecoder();

function failure(durationMs: number, errorCode: AttemptErrorCode, error: string): AttemptOutcome {
  return { ok: false, statusCode: null, durationMs, error, errorCode, responseBody: '', retryAfterMs: null };
}

function parseTarget(url: string): Target | string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `invalid URL ${JSON.stringify(url)}`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `unsupported URL scheme ${parsed.protocol}`;
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}`, literalHost: isIP(host) !== 0 ? host : null, authorization: basicAuthorization(parsed) };
}

function buildHeaders(authorization: string | null, given: Readonly<Record<string, string>>): Record<string, string> {
  const headers: Record<string, string> = authorization === null ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', authorization };
  for (const [name, value] of Object.entries(given)) {
    headers[name.toLowerCase()] = value;
  }
  return headers;
}

/** `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); a past date means now. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (text === undefined || text === '') {
    return null;
  }
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    return Number.isSafeInteger(ms) ? ms : null;
  }
  // Every HTTP-date form names a month; without this, Date.parse reads "-5" as a year.
  const at = /[a-z]{3}/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

const ERROR_CLASSES: ReadonlyArray<readonly [AttemptErrorCode, string, (code: string) => boolean]> = [
  ['blocked_address', 'address not allowed', (code) => code === BLOCKED_ADDRESS_CODE],
  ['timeout', 'timeout', (code) => ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'].includes(code)],
  ['connection_refused', 'connection refused', (code) => code === 'ECONNREFUSED'],
  // undici reports a peer that hangs up mid-exchange as UND_ERR_SOCKET ("other side closed").
  ['connection_reset', 'connection reset', (code) => ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'].includes(code)],
  ['dns', 'DNS lookup failed', (code) => ['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME'].includes(code)],
  ['tls', 'TLS error', (code) => code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.includes('CERT') || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || code === 'EPROTO'],
  ['invalid_response', 'invalid response', (code) => code.startsWith('HPE_') || ['UND_ERR_HEADERS_OVERFLOW', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'UND_ERR_RES_EXCEEDED_MAX_SIZE', 'UND_ERR_INFO'].includes(code)],
  ['aborted', 'aborted', (code) => ['UND_ERR_ABORTED', 'ABORT_ERR', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED'].includes(code)],
  ['network', 'network unreachable', (code) => ['ENETUNREACH', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL'].includes(code)],
];

/** Classifies by error `code`, looking through `cause` and happy-eyeballs `AggregateError`s. */
function classifyError(error: unknown): [AttemptErrorCode, string] {
  const codes = collectCodes(error, 0);
  const refusal = findBlockedAddressError(error, 0);
  if (refusal) return ['blocked_address', refusal];
  for (const [errorCode, reason, matches] of ERROR_CLASSES) {
    const code = codes.find(matches);
    if (code !== undefined) {
      return [errorCode, errorCode === 'network' || errorCode === 'tls' || errorCode === 'invalid_response' ? `${reason} (${code})` : reason];
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return ['network', codes[0] === undefined ? `network error: ${message}` : `network error (${codes[0]}): ${message}`];
}

function findBlockedAddressError(error: unknown, depth: number): string | null {
  if (depth > 4 || typeof error !== 'object' || error === null) return null;
  const { code, cause, errors, message } = error as { code?: unknown; cause?: unknown; errors?: unknown; message?: unknown };
  if (code === BLOCKED_ADDRESS_CODE && typeof message === 'string') return message;
  for (const inner of Array.isArray(errors) ? errors : []) {
    const found = findBlockedAddressError(inner, depth + 1);
    if (found) return found;
  }
  return findBlockedAddressError(cause, depth + 1);
}

function collectCodes(error: unknown, depth: number): string[] {
  if (depth > 4 || typeof error !== 'object' || error === null) {
    return [];
  }
  const { code, cause, errors, name } = error as { code?: unknown; cause?: unknown; errors?: unknown; name?: unknown };
  // undici's HTTPParserError arrives without a code (undici 7 looks llhttp's error number up in a
  // name-to-number table), so its name stands in for one.
  const own = typeof code === 'string' ? [code] : name === 'HTTPParserError' ? ['HPE_INVALID_RESPONSE'] : [];
  const nested = Array.isArray(errors) ? errors.flatMap((inner) => collectCodes(inner, depth + 1)) : [];
  return [...own, ...nested, ...collectCodes(cause, depth + 1)];
}
