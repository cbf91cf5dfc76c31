/**
 * Figures, not verdicts: what the receiver really does at its edges, found by searching with valid,
 * correctly signed deliveries. The timestamp window on both sides (how old, how far ahead a
 * timestamp it accepts), the largest body it accepts, and how it treats a client that stops
 * mid-body (slow-loris) or declares a content-length it does not keep. Requests go through the
 * injected `send`/`stall`, so the search is plain logic.
 */
import { buildRequest } from './build.js';
import type { BuildContext, FuzzRequest } from './build.js';
import type { DeliveryDraft } from './cases.js';
import type { WireOutcome, WireRequest, StallOutcome } from './wire.js';

export interface MeasureOptions {
  /** The receiver's HMAC key. */
  readonly key: Uint8Array;
  readonly toleranceSeconds: number;
  readonly maxBodyBytes: number;
  /** How long a stalled request waits for the receiver to answer or close. */
  readonly stallWaitMs: number;
  /** Unsigned headers sent with every request (`--header`). @default none */
  readonly customHeaders?: Readonly<Record<string, string>>;
  newWebhookId(): string;
  send(request: WireRequest): Promise<WireOutcome>;
  stall(request: WireRequest, waitMs: number): Promise<StallOutcome>;
  /** @default Date.now */
  readonly now?: () => number;
}

/** Seconds a timestamp may be off and still be accepted; null when even a current one is not. */
export interface WindowSide {
  readonly acceptedSeconds: number | null;
  /** True when the search hit its cap still accepting: no check found. */
  readonly unbounded: boolean;
}

export interface Measurements {
  readonly timestampWindow: { readonly past: WindowSide; readonly future: WindowSide; readonly capSeconds: number };
  /** Largest body accepted, in bytes (to within 1 % or 1 KiB); null when even a small one is not. */
  readonly largestBody: { readonly acceptedBytes: number | null; readonly unbounded: boolean; readonly capBytes: number };
  /** Half a body sent, then nothing. */
  readonly slowBody: StallOutcome;
  /** A content-length 64 bytes longer than the body, then the client closes its side. */
  readonly longContentLength: StallOutcome;
  /** A content-length 16 bytes shorter than the body: the receiver reads a cut body, which must not verify. */
  readonly shortContentLength: { readonly status: number | null };
}

export const WINDOW_CAP_SECONDS = 400 * 24 * 3600;
const BODY_CAP_FACTOR = 4;

const DRAFT: DeliveryDraft = {
  idStem: 'measure',
  offsetSeconds: 0,
  eventId: 'evt_measure',
  eventType: 'service.trigger.event',
  eventTime: '2026-01-01T00:00:00.000+00:00',
  metadata: {},
  data: { probe: true },
  corpusPick: 0,
};

/** A valid delivery of a small fixed event, `offsetSeconds` from now: the measuring probe, and the CLI's first request. */
export const validProbe = (context: BuildContext, offsetSeconds = 0): FuzzRequest => buildRequest({ kind: 'valid', delivery: { ...DRAFT, offsetSeconds } }, context);

const accepted = (outcome: { status: number | null }) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300;

/** The largest value in (good, bad) that `ok` accepts, by bisection to `resolution(value)`. */
async function bisect(good: number, bad: number, ok: (value: number) => Promise<boolean>, resolution: (value: number) => number): Promise<number> {
  while (bad - good > resolution(good)) {
    const middle = Math.floor((good + bad) / 2);
    if (await ok(middle)) good = middle;
    else bad = middle;
  }
  return good;
}

export async function measureReceiver(options: MeasureOptions): Promise<Measurements> {
  const now = options.now ?? Date.now;
  const context = (maxBodyBytes = options.maxBodyBytes): BuildContext => ({ key: options.key, webhookId: options.newWebhookId(), nowSeconds: Math.floor(now() / 1000), toleranceSeconds: options.toleranceSeconds, maxBodyBytes, ...(options.customHeaders ? { customHeaders: options.customHeaders } : {}) });
  const validAt = (offsetSeconds: number) => validProbe(context(), offsetSeconds);
  // An oversized case built for a limit one byte below `bytes` is a valid delivery of exactly `bytes` (or the smallest body).
  const validOfSize = (bytes: number) => buildRequest({ kind: 'oversized-body', delivery: DRAFT, extraBytes: 0 }, context(Math.max(0, bytes - 1)));
  const sendOk = async (request: WireRequest) => accepted(await options.send(request));

  async function side(sign: 1 | -1): Promise<WindowSide> {
    if (!(await sendOk(validAt(0)))) return { acceptedSeconds: null, unbounded: false };
    let good = 0;
    let bad = 64;
    while (await sendOk(validAt(sign * bad))) {
      good = bad;
      if (bad >= WINDOW_CAP_SECONDS) return { acceptedSeconds: good, unbounded: true };
      bad = Math.min(WINDOW_CAP_SECONDS, bad * 8);
    }
    return { acceptedSeconds: await bisect(good, bad, (offset) => sendOk(validAt(sign * offset)), () => 1), unbounded: false };
  }

  async function largestBody(): Promise<Measurements['largestBody']> {
    const capBytes = options.maxBodyBytes * BODY_CAP_FACTOR;
    const smallest = validOfSize(0).body.length;
    const okSize = (bytes: number) => sendOk(validOfSize(bytes));
    const resolution = (bytes: number) => Math.max(1024, Math.floor(bytes / 100));
    if (!(await okSize(smallest))) return { acceptedBytes: null, unbounded: false, capBytes };
    if (!(await okSize(options.maxBodyBytes))) return { acceptedBytes: await bisect(smallest, options.maxBodyBytes, okSize, resolution), unbounded: false, capBytes };
    if (await okSize(capBytes)) return { acceptedBytes: capBytes, unbounded: true, capBytes };
    return { acceptedBytes: await bisect(options.maxBodyBytes, capBytes, okSize, resolution), unbounded: false, capBytes };
  }

  const past = await side(-1);
  const future = await side(1);
  const body = await largestBody();
  const slow = validAt(0);
  const long = validAt(0);
  const short = validAt(0);
  const [slowBody, longContentLength, shortAnswer] = await Promise.all([
    options.stall({ ...slow, splits: [Math.floor(slow.body.length / 2)], piecesSent: 1, after: 'stall' }, options.stallWaitMs),
    options.stall({ ...long, declaredLength: long.body.length + 64, after: 'half-close' }, options.stallWaitMs),
    options.send({ ...short, declaredLength: short.body.length - 16 }),
  ]);
  return {
    timestampWindow: { past, future, capSeconds: WINDOW_CAP_SECONDS },
    largestBody: body,
    slowBody,
    longContentLength,
    shortContentLength: { status: shortAnswer.status },
  };
}

/** Whether a measurement shows a failure rather than a figure: a cut body accepted. */
export const measurementFailures = (measurements: Measurements): string[] =>
  accepted(measurements.shortContentLength)
    ? [`a body 16 bytes shorter than signed (content-length cut) was accepted with ${measurements.shortContentLength.status}: the receiver did not verify the bytes it read`]
    : [];
