/**
 * Re-sends stored events to a target: each is the stored envelope byte for byte, signed for this
 * send (Standard Webhooks) with the given secrets under a fresh `webhook-id`, with the headers a
 * real delivery carries. As a load and soak
 * tool it also runs `concurrency` sends at once, loops the selection for a duration, and adds the
 * disorder at-least-once delivery causes: a shuffled order, and duplicates (the same `webhook-id`
 * and body again, re-signed, a little later). Sending, randomness and the clock are injected, so
 * the core is plain logic; `hookline replay` gives it undici and the real clock.
 */
import { createHash } from 'node:crypto';
import { deliveryHeadersWithContentType } from '../signing/delivery-headers.js';
import { signWebhook } from '../signing/sign.js';
import type { StoredEventRef } from './event-log.js';

export interface ReplaySendResult {
  readonly status: number | null;
  readonly error: string | null;
  /** How long the exchange took, for the latency figures. */
  readonly durationMs?: number;
}

export interface ReplayOptions {
  readonly events: readonly StoredEventRef[];
  /** The envelope bytes of an event; undefined when it is gone (pruned meanwhile). */
  load(event: StoredEventRef): Uint8Array | undefined;
  /** The target's `whsec_…` secrets, newest first: a send carries a signature by each, as a delivery does during a rotation. */
  readonly secrets: readonly string[];
  /** Sent with every request, as a webhook's `headers` are with its deliveries (unsigned). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly ratePerSecond: number;
  /** Sends in flight at once. @default 1 */
  readonly concurrency?: number;
  /** Loop the selection (fresh ids each pass) until this long has passed. @default one pass */
  readonly durationMs?: number;
  /** The chance that a send is followed, later, by a duplicate of it (same webhook-id and body). @default 0 */
  readonly duplicateRate?: number;
  /** Send each pass in a random order. @default oldest first */
  readonly shuffle?: boolean;
  /** Random numbers in [0, 1) for shuffling and duplicates; seed it to replay a run. @default Math.random */
  readonly random?: () => number;
  send(headers: Readonly<Record<string, string>>, body: Uint8Array): Promise<ReplaySendResult>;
  /** A fresh `webhook-id` per send. */
  newWebhookId(): string;
  /** @default Date.now */
  readonly now?: () => number;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Stops before the next send; what was sent is summarised. */
  readonly signal?: AbortSignal;
  /** `total` is the sends planned so far (a pass, and the duplicates drawn). */
  onProgress?(done: number, total: number, event: StoredEventRef): void;
}

export interface ReplayResult {
  readonly event: StoredEventRef;
  readonly webhookId: string | null;
  readonly status: number | null;
  /** Why it failed: `HTTP 500`, a network error, `event no longer stored`; null on a 2xx. */
  readonly error: string | null;
}

export interface Latency {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface ReplaySummary {
  /** Events selected. */
  readonly total: number;
  readonly sent: number;
  readonly succeeded: number;
  /** The first failures (at most 100); `failures` counts them all. */
  readonly failed: readonly ReplayResult[];
  readonly failures: number;
  /** Passes over the selection begun. */
  readonly passes: number;
  readonly duplicates: number;
  /** Milliseconds per answered or timed-out send; null when nothing was sent. */
  readonly latency: Latency | null;
  /** Answers by status (`204`, `500`, `no answer`, `not stored`). */
  readonly answers: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
  /** True when the signal stopped the run early. */
  readonly stopped: boolean;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Spaces starts at least `1000 / ratePerSecond` ms apart, across concurrent callers: each reserves
 * its slot before sleeping. A slow target lowers the rate, never raises it: a late start does not bank time.
 */
export function createPacer(ratePerSecond: number, now: () => number, sleep: (ms: number) => Promise<void>) {
  const interval = 1000 / ratePerSecond;
  let nextAt = -Infinity;
  return async function wait(): Promise<void> {
    const time = now();
    const slot = Math.max(nextAt, time);
    nextAt = slot + interval;
    if (slot > time) await sleep(slot - time);
  };
}

/** The value below which `fraction` of the sorted values fall (nearest rank). */
const percentile = (sorted: readonly number[], fraction: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!;

export function latencyOf(durations: readonly number[]): Latency | null {
  if (durations.length === 0) return null;
  const sorted = [...durations].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1]! };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Numbers in [0, 1) from a seed (SHA-256 of seed and counter): the same seed, the same shuffles and duplicates. */
export function seededRandom(seed: number): () => number {
  let counter = 0;
  return () => createHash('sha256').update(`${seed}:${counter++}`).digest().readUInt32BE(0) / 2 ** 32;
}

const MAX_FAILURES_KEPT = 100;

interface Job {
  readonly event: StoredEventRef;
  /** Set for a duplicate: the id of the send it repeats. */
  readonly webhookId: string | null;
}

export async function replayEvents(options: ReplayOptions): Promise<ReplaySummary> {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const pace = createPacer(options.ratePerSecond, now, options.sleep ?? realSleep);
  const startedAt = now();
  const answers: Record<string, number> = {};
  const failed: ReplayResult[] = [];
  const durations: number[] = [];
  const queue: Job[] = [];
  let failures = 0;
  let sent = 0;
  let succeeded = 0;
  let duplicates = 0;
  let passes = 0;
  let done = 0;
  let planned = 0;
  let stopped = false;
  const timeLeft = () => options.durationMs !== undefined && now() - startedAt < options.durationMs;

  function refill(): boolean {
    if (options.events.length === 0 || (passes > 0 && !timeLeft())) return false;
    passes++;
    const order = options.shuffle ? shuffled(options.events, random) : options.events;
    queue.push(...order.map((event) => ({ event, webhookId: null })));
    planned += order.length;
    return true;
  }

  function record(result: ReplayResult, label: string): void {
    answers[label] = (answers[label] ?? 0) + 1;
    if (result.error === null) return;
    failures++;
    if (failed.length < MAX_FAILURES_KEPT) failed.push(result);
  }

  async function sendOne(job: Job): Promise<void> {
    const body = options.load(job.event);
    if (body === undefined) return record({ event: job.event, webhookId: null, status: null, error: 'event no longer stored' }, 'not stored');
    await pace();
    const webhookId = job.webhookId ?? options.newWebhookId();
    const timestamp = Math.floor(now() / 1000);
    const signature = await signWebhook({ id: webhookId, timestamp, body, secret: options.secrets });
    const headers = deliveryHeadersWithContentType(options.headers, webhookId, String(timestamp), signature);
    const answer = await options.send(headers, body);
    sent++;
    if (answer.durationMs !== undefined) durations.push(answer.durationMs);
    const ok = answer.status !== null && answer.status >= 200 && answer.status < 300;
    if (ok) succeeded++;
    record({ event: job.event, webhookId, status: answer.status, error: ok ? null : (answer.error ?? `HTTP ${answer.status}`) }, answer.status === null ? 'no answer' : String(answer.status));
    // A duplicate comes some sends later, as a retry after a lost answer would.
    if (job.webhookId === null && options.duplicateRate && random() < options.duplicateRate) {
      queue.splice(Math.floor(random() * (queue.length + 1)), 0, { event: job.event, webhookId });
      duplicates++;
      planned++;
    }
  }

  async function worker(): Promise<void> {
    for (;;) {
      if (options.signal?.aborted) {
        stopped = true;
        return;
      }
      const job = queue.shift() ?? (refill() ? queue.shift() : undefined);
      if (!job) return;
      await sendOne(job);
      options.onProgress?.(++done, Math.max(planned, done), job.event);
    }
  }

  refill();
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  return { total: options.events.length, sent, succeeded, failed, failures, passes, duplicates, latency: latencyOf(durations), answers, elapsedMs: now() - startedAt, stopped };
}
