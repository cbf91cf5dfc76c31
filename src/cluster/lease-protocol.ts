import { HooklineError, type HooklineErrorCode } from '../errors.js';
import type { NatsAccess } from '../transport/nats-access.js';
import type { FencedOutcome } from './lease-renewal.js';

/**
 * What the main thread (`LeaseKeeper`) and the lease worker (`lease-worker.ts`) say to each other.
 * The shared memory is a `BigInt64Array`: the main thread's last turn (ms) at `LAST_TURN_SLOT`, and
 * each partition's lease validity (ms; 0 when not held) at `validitySlot(partition)`.
 */

export const LAST_TURN_SLOT = 0;
export const validitySlot = (partition: number): number => partition + 1;
export const sharedSlots = (partitions: number): number => partitions + 1;

export interface LeaseWorkerData {
  access: NatsAccess;
  bucket: string;
  replicas: number;
  nodeId: string;
  leaseMs: number;
  tickMs: number;
  maxStallMs: number;
  /** The worker connection's nats.js `maxReconnectAttempts`; unset, it reconnects forever. */
  maxReconnectAttempts?: number;
  shared: SharedArrayBuffer;
}

export type LeaseCall =
  | { op: 'join' }
  | { op: 'acquire'; partition: number }
  | { op: 'release'; partition: number }
  | { op: 'holds'; partition: number }
  | { op: 'liveNodes' }
  | { op: 'unowned'; partitions: number }
  | { op: 'everyLiveNodeReadsSnapshots' }
  | { op: 'withdraw' }
  | { op: 'leave' };

export type LeaseRequest = LeaseCall & { id: number };

/** An error as it crosses the thread boundary (a structured clone keeps no class and no code). */
export interface ErrorFields {
  name: string;
  message: string;
  code?: string;
}

export type LeaseWorkerMessage =
  | { type: 'ready' }
  | { type: 'failed'; error: ErrorFields }
  /** The worker's NATS connection ended for good after the start (no lease is renewed any more), and the line naming what to fix. */
  | { type: 'closed'; reason: string }
  /** Another process claimed the node id (this one stalled past a lease): no lease is kept from now on, and the line saying so. */
  | { type: 'superseded'; reason: string }
  | { type: 'reply'; id: number; result?: unknown; error?: ErrorFields }
  | { type: 'fenced'; partition: number; outcome: FencedOutcome }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; fields: Record<string, unknown>; message: string };

export function errorFields(error: unknown): ErrorFields {
  const { name, message, code } = (error ?? {}) as { name?: unknown; message?: unknown; code?: unknown };
  return { name: String(name ?? 'Error'), message: String(message ?? error), ...(code !== undefined ? { code: String(code) } : {}) };
}

/** An error sent across as `ErrorFields`, made an `Error` again (with its code) on this side. */
export function errorFrom(fields: ErrorFields): Error {
  // A start failure is already the one line naming the setting: kept as it is.
  if (fields.name === 'HooklineError' && fields.code) return new HooklineError(fields.code as HooklineErrorCode, fields.message);
  return Object.assign(new Error(fields.message), { name: fields.name, ...(fields.code !== undefined ? { code: fields.code } : {}) });
}
