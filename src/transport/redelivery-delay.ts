/**
 * How long a nak'ed JetStream message waits before the server offers it again. Pure: the
 * randomness is an argument. A message refused again and again (storage full for an hour, a
 * project over its waiting limit) waits twice as long each time, up to `MAX_REDELIVERY_DELAY_MS`,
 * so a refusal that lasts costs a few refusals a minute, not one a second per message.
 */

/** The longest a nak'ed message waits, before jitter (±20%). */
export const MAX_REDELIVERY_DELAY_MS = 30_000;

/** Each delay is spread uniformly over ±20%, so messages refused together come back apart. */
const JITTER_RATIO = 0.2;

export interface RedeliveryInput {
  /** Times the server has delivered the message, counting this one (JetStream's `deliveryCount`, 1 on the first). */
  readonly deliveryCount: number;
  /** The delay after a first refusal (`nakDelayMs`). */
  readonly baseMs: number;
  /** The refusal's `Retry-After` in milliseconds, a floor for the delay. @default 0 */
  readonly retryAfterMs?: number;
  /** Uniform in [0, 1), like `Math.random`. */
  readonly random: () => number;
}

/**
 * The longer of `baseMs` and `retryAfterMs`, doubled for each earlier delivery, at most
 * `MAX_REDELIVERY_DELAY_MS`, jittered by ±20%, and never below `retryAfterMs`.
 */
export function redeliveryDelay(input: RedeliveryInput): number {
  const retryAfterMs = input.retryAfterMs ?? 0;
  const earlier = Math.max(0, Math.floor(input.deliveryCount) - 1);
  // 2 ** 30 and beyond only overflow into the cap.
  const grown = Math.min(MAX_REDELIVERY_DELAY_MS, Math.max(input.baseMs, retryAfterMs) * 2 ** Math.min(earlier, 30));
  const jittered = Math.round(grown * (1 - JITTER_RATIO + 2 * JITTER_RATIO * input.random()));
  return Math.max(jittered, retryAfterMs);
}
