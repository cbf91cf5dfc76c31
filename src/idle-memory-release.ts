import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Clock } from './actors/clock.js';
import { systemClock } from './actors/clock.js';
import type { NativeHeapTrim } from './native-heap-trim.js';
import { nativeHeapTrim } from './native-heap-trim.js';

/**
 * Gives memory back to the system once a node goes idle after a burst.
 *
 * V8 keeps what a burst grew. Measured with 100,000 deliveries ingested and left retrying: old space
 * at 147 MB committed for 54 MB live (the deliveries that stay were promoted among the burst's
 * garbage, so every page holds a few), and 30–60 MB of array buffers that only a major GC frees.
 * An idle node does no GC at all, so nothing of it came back in 40 s: V8's own memory reducer never
 * started, on Node 20 or 24. Here one compacting full GC runs when the event loop has been idle for
 * a while and the heap has grown since the last one: measured, it took the heap and its buffers
 * from 217 to 111 MB in 417 ms (a loaded machine), what a restart holding the same deliveries has.
 * glibc keeps the native buffers the burst freed (and the GC just freed) in its own heap, about 90 MB
 * of RSS in that measurement; a `malloc_trim` after the GC gives those pages back (native-heap-trim.ts).
 *
 * That GC stops the world, so it runs only when the loop is idle (never while ingest or attempts
 * keep it busy), and only after growth, so a node at a steady low rate does not run it again and
 * again. A node gone idle is exactly when a pause costs nothing.
 */

/** One reading, taken every check. */
export interface MemoryReading {
  /** V8's committed heap plus the memory JS objects hold outside it (array buffers), in bytes. */
  footprintBytes: number;
  /** Share of the time since the previous reading that the event loop was busy, 0 to 1. */
  loopUtilization: number;
}

export interface ReleasePolicy {
  /** Growth of the footprint above its lowest reading since the last release that is worth a GC. */
  growthBytes: number;
  /** Consecutive idle readings before a release. */
  idleReadings: number;
  /** A reading whose loop utilization is below this is idle. */
  idleUtilization: number;
}

/**
 * Every 250 ms; a release after 1 s idle (4 readings under 5% busy) and 32 MB of growth. Below 32 MB
 * a pause of a few hundred ms buys little; 100,000 events ingested grew the footprint by 100–190 MB,
 * and resuming 100,000 deliveries at start by about 75 MB.
 */
export const DEFAULT_RELEASE_POLICY: ReleasePolicy = { growthBytes: 32 * 1024 * 1024, idleReadings: 4, idleUtilization: 0.05 };
const CHECK_INTERVAL_MS = 250;

export interface ReleaseState {
  /** Lowest footprint since the last release (or the start); growth is measured from it. */
  floorBytes: number;
  idleReadings: number;
}

/** The first state, from the first reading. */
export function initialReleaseState(reading: MemoryReading): ReleaseState {
  return { floorBytes: reading.footprintBytes, idleReadings: 0 };
}

/** Whether this reading calls for a release, and the state after it (before the release runs). */
export function nextRelease(state: ReleaseState, reading: MemoryReading, policy: ReleasePolicy): { release: boolean; state: ReleaseState } {
  const idleReadings = reading.loopUtilization < policy.idleUtilization ? state.idleReadings + 1 : 0;
  const floorBytes = Math.min(state.floorBytes, reading.footprintBytes);
  const release = idleReadings >= policy.idleReadings && reading.footprintBytes - floorBytes >= policy.growthBytes;
  return { release, state: { floorBytes, idleReadings: release ? 0 : idleReadings } };
}

/** After a release: growth is measured from what the heap holds now. */
export function afterRelease(state: ReleaseState, reading: MemoryReading): ReleaseState {
  return { ...state, floorBytes: reading.footprintBytes };
}

export interface ReleaseReport {
  beforeBytes: number;
  afterBytes: number;
  /** The GC and the trim together. */
  durationMs: number;
  /** Whether the trim gave glibc's free pages back (false where there is no trim: not glibc, no koffi). */
  nativeTrimmed: boolean;
}

export interface IdleMemoryReleaseOptions {
  /** @default this process: `process.memoryUsage()` and `performance.eventLoopUtilization()` */
  read?: () => MemoryReading;
  /** @default a compacting full GC (`compactingGc`) */
  collect?: () => void;
  /** Run after `collect`, which frees the native buffers that dead JS objects held. @default `nativeHeapTrim()` (glibc's `malloc_trim`) */
  trimNative?: NativeHeapTrim;
  /** @default the system clock (its timers are unref'd: they never keep the process up) */
  clock?: Clock;
  /** @default DEFAULT_RELEASE_POLICY */
  policy?: ReleasePolicy;
  /** Told of each release (a log line). */
  onRelease?: (report: ReleaseReport) => void;
}

/** Reads this process's footprint and the loop's busy share since the previous call. */
export function processReader(): () => MemoryReading {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    const { heapTotal, arrayBuffers } = process.memoryUsage();
    return { footprintBytes: heapTotal + arrayBuffers, loopUtilization: utilization };
  };
}

/**
 * A compacting full GC. `gc` is taken from a fresh context with `--expose-gc` set for that moment
 * only, since node flags would have to be repeated in every launcher (`npm start`, Docker, systemd).
 * Node 20 (V8 11) runs a full GC for `gc()` but a young one for any options object; from V8 12
 * `gc()` is a young GC and `{ type: 'major', flavor: 'last-resort' }` also shrinks new space.
 * `--compact-on-every-full-gc` makes it move every live object off sparse pages, not the few
 * megabytes a normal GC moves.
 */
export function compactingGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options?: object) => void;
  v8.setFlagsFromString('--no-expose-gc');
  const optionsUnderstood = Number(process.versions.v8.split('.')[0]) >= 12;
  return () => {
    v8.setFlagsFromString('--compact-on-every-full-gc');
    try {
      if (optionsUnderstood) gc({ type: 'major', flavor: 'last-resort' });
      else gc();
    } finally {
      v8.setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
}

/** Runs `nextRelease` on a reading every 250 ms and a release when it says so. */
export class IdleMemoryRelease {
  private readonly read: () => MemoryReading;
  private readonly collect: () => void;
  private readonly trimNative: NativeHeapTrim;
  private readonly clock: Clock;
  private readonly policy: ReleasePolicy;
  private readonly onRelease: (report: ReleaseReport) => void;
  private state: ReleaseState;
  private timer: unknown = null;

  constructor(options: IdleMemoryReleaseOptions = {}) {
    this.read = options.read ?? processReader();
    this.collect = options.collect ?? compactingGc();
    this.trimNative = options.trimNative ?? nativeHeapTrim();
    this.clock = options.clock ?? systemClock;
    this.policy = options.policy ?? DEFAULT_RELEASE_POLICY;
    this.onRelease = options.onRelease ?? (() => {});
    this.state = initialReleaseState(this.read());
  }

  start(): this {
    if (this.timer === null) this.arm();
    return this;
  }

  stop(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }

  /** One reading, and a release if it calls for one; the timer calls it, and tests that drive a manual clock. */
  check(): void {
    const reading = this.read();
    const next = nextRelease(this.state, reading, this.policy);
    this.state = next.state;
    if (!next.release) return;
    const startedAt = performance.now();
    this.collect();
    const nativeTrimmed = this.trimNative();
    const after = this.read();
    this.state = afterRelease(this.state, after);
    this.onRelease({ beforeBytes: reading.footprintBytes, afterBytes: after.footprintBytes, durationMs: performance.now() - startedAt, nativeTrimmed });
  }

  private arm(): void {
    this.timer = this.clock.setTimer(() => {
      this.check();
      if (this.timer !== null) this.arm();
    }, CHECK_INTERVAL_MS);
  }
}
