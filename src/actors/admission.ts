import { HooklineError } from '../errors.js';
import type { ErrorDetail } from '../errors.js';

/**
 * The one check of whether a node may take more deliveries into memory and write new records now:
 * ingest asks it, and so do the recovery operations (retry, redrive, replay), which bring
 * deliveries back into memory and write to the store just as an ingest does. None may start on a
 * draining node (503 `shutting_down`: what it writes after the drain would meet a closed store), nor
 * carry the node past HOOKLINE_MAX_LIVE_DELIVERIES (503 `overloaded`) or HOOKLINE_MAX_DATA_SIZE and
 * the disk's reserve (503 `storage_full`).
 */

/** The refusal of a node that is shutting down (SIGTERM): it takes nothing new while it drains. */
export function shuttingDownError(unchanged = 'nothing was stored'): HooklineError {
  return new HooklineError('HOOKLINE_ERR_SHUTTING_DOWN', `this node is draining; ${unchanged}, send it again shortly (to another node, or after the restart)`);
}

/** Deliveries held in memory on the node, shared by every actor of its engine, and the most allowed. */
export interface LiveBudget {
  count: number;
  readonly max: number;
}

/** How many more deliveries the node may hold in memory now. */
export function liveRoom(budget: LiveBudget): number {
  return Math.max(0, budget.max - budget.count);
}

export interface AdmissionRequest {
  /** How many deliveries the operation would take into memory (0: an event no webhook wants, a retry of one still held). */
  adding: number;
  /** What the refused operation left undone, as its message says it: "nothing was stored". */
  unchanged: string;
  /**
   * The `overloaded` refusal's message and details, given the room left, when the operation's own
   * words say more than the live count (a redrive names how many it would start).
   * @default "<count> deliveries are already waiting (HOOKLINE_MAX_LIVE_DELIVERIES); <unchanged>, send again shortly"
   */
  overloaded?: (room: number) => { message: string; details: ErrorDetail[] };
}

/** What the check reads of the project's actor: its node's budget and store, and whether it drains. */
export interface AdmissionState {
  readonly liveBudget: LiveBudget;
  readonly store: { isOverQuota(): boolean };
  readonly isDraining: boolean;
}

/** Why the operation may not proceed now, or null: a drain first, then the live limit, then the data's. */
export function admissionRefusal({ liveBudget: budget, store, isDraining }: AdmissionState, request: AdmissionRequest): HooklineError | null {
  if (isDraining) return shuttingDownError(request.unchanged);
  const room = liveRoom(budget);
  if (request.adding > room) {
    const { message, details } = request.overloaded?.(room) ?? { message: `${budget.count} deliveries are already waiting (HOOKLINE_MAX_LIVE_DELIVERIES); ${request.unchanged}, send again shortly`, details: [] };
    return new HooklineError('HOOKLINE_ERR_OVERLOADED', message, { details, retryAfterSeconds: 5 });
  }
  if (store.isOverQuota()) {
    return new HooklineError('HOOKLINE_ERR_STORAGE_FULL', `the data directory is at HOOKLINE_MAX_DATA_SIZE or its disk is nearly full; ${request.unchanged}. Free space or raise the limit; stored events are still being delivered`, { retryAfterSeconds: 30 });
  }
  return null;
}
