/**
 * The nemesis's own event loop, watched: its link proxies and receivers run on it, so a stall of
 * the nemesis is a partition of everything and a late receipt, which the report must tell apart
 * from Hookline's doing. A tick every 100 ms; how late each fires, the worst of each second.
 */

const TICK_MS = 100;

export interface LoopLag {
  /** The worst lateness of each second from the start, ms. */
  readonly perSecond: readonly number[];
  stop(): void;
}

export function watchLoopLag(startedAt: number): LoopLag {
  const perSecond: number[] = [];
  let expected = Date.now() + TICK_MS;
  const timer = setInterval(() => {
    const now = Date.now();
    const second = Math.floor((now - startedAt) / 1000);
    perSecond[second] = Math.max(perSecond[second] ?? 0, Math.max(0, now - expected));
    expected = now + TICK_MS;
  }, TICK_MS);
  timer.unref();
  return { perSecond, stop: () => clearInterval(timer) };
}
