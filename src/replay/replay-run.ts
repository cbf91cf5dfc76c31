/**
 * Re-sends stored events to a target, one at a time, at most `ratePerSecond` of them a second:
 * each is the stored envelope byte for byte, signed for this send (Standard Webhooks) with the
 * given secret under a fresh `webhook-id`. Sending and the clock are injected, so the core is
 * plain logic; `hookline replay` gives it undici and the real clock.
 */
import { signWebhook } from '../signing/sign.js';
import type { StoredEventRef } from './event-log.js';

export interface ReplaySendResult {
  readonly status: number | null;
  readonly error: string | null;
}

export interface ReplayOptions {
  readonly events: readonly StoredEventRef[];
  /** The envelope bytes of an event; undefined when it is gone (pruned meanwhile). */
  load(event: StoredEventRef): Uint8Array | undefined;
  /** The target's `whsec_…` secret. */
  readonly secret: string;
  readonly ratePerSecond: number;
  send(headers: Readonly<Record<string, string>>, body: Uint8Array): Promise<ReplaySendResult>;
  /** A fresh `webhook-id` per send. */
  newWebhookId(): string;
  /** @default Date.now */
  readonly now?: () => number;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Stops before the next send; what was sent is summarised. */
  readonly signal?: AbortSignal;
  onProgress?(done: number, total: number, event: StoredEventRef): void;
}

export interface ReplayResult {
  readonly event: StoredEventRef;
  readonly webhookId: string | null;
  readonly status: number | null;
  /** Why it failed: `HTTP 500`, a network error, `event no longer stored`; null on a 2xx. */
  readonly error: string | null;
}

export interface ReplaySummary {
  readonly total: number;
  readonly sent: number;
  readonly succeeded: number;
  readonly failed: readonly ReplayResult[];
  /** Answers by status (`204`, `500`, `no answer`, `not stored`). */
  readonly answers: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
  /** True when the signal stopped the run early. */
  readonly stopped: boolean;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Spaces starts at least `1000 / ratePerSecond` ms apart; a slow target lowers the rate, never
 * raises it, since sends are sequential and a late start does not bank time.
 */
export function createPacer(ratePerSecond: number, now: () => number, sleep: (ms: number) => Promise<void>) {
  const interval = 1000 / ratePerSecond;
  let nextAt = -Infinity;
  return async function wait(): Promise<void> {
    const time = now();
    if (time < nextAt) await sleep(nextAt - time);
    nextAt = Math.max(nextAt, time) + interval;
  };
}

export async function replayEvents(options: ReplayOptions): Promise<ReplaySummary> {
  const now = options.now ?? Date.now;
  const pace = createPacer(options.ratePerSecond, now, options.sleep ?? realSleep);
  const startedAt = now();
  const answers: Record<string, number> = {};
  const failed: ReplayResult[] = [];
  let sent = 0;
  let succeeded = 0;
  let stopped = false;
  for (const [index, event] of options.events.entries()) {
    if (options.signal?.aborted) {
      stopped = true;
      break;
    }
    const body = options.load(event);
    let result: ReplayResult;
    if (body === undefined) {
      result = { event, webhookId: null, status: null, error: 'event no longer stored' };
      answers['not stored'] = (answers['not stored'] ?? 0) + 1;
    } else {
      await pace();
      const webhookId = options.newWebhookId();
      const timestamp = Math.floor(now() / 1000);
      const signature = await signWebhook({ id: webhookId, timestamp, body, secrets: options.secret });
      const headers = { 'content-type': 'application/json', 'webhook-id': webhookId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
      const answer = await options.send(headers, body);
      sent++;
      const ok = answer.status !== null && answer.status >= 200 && answer.status < 300;
      const label = answer.status === null ? 'no answer' : String(answer.status);
      answers[label] = (answers[label] ?? 0) + 1;
      result = { event, webhookId, status: answer.status, error: ok ? null : (answer.error ?? `HTTP ${answer.status}`) };
      if (ok) succeeded++;
    }
    if (result.error !== null) failed.push(result);
    options.onProgress?.(index + 1, options.events.length, event);
  }
  return { total: options.events.length, sent, succeeded, failed, answers, elapsedMs: now() - startedAt, stopped };
}
