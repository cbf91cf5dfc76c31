import { HooklineError } from '../errors.js';
import type { ErrorDetail } from '../errors.js';

/**
 * The one check of whether a project may take more waiting deliveries and write new records now:
 * ingest asks it, and so do the recovery operations (retry, redrive, replay), which make deliveries
 * wait again and write to the store just as an ingest does. None may start on a draining node (503
 * `shutting_down`: what it writes after the drain would meet a closed store), nor carry the project
 * past HOOKLINE_MAX_WAITING_PER_PROJECT (503 `overloaded`: that project alone, others are served),
 * nor the node past HOOKLINE_MAX_DATA_SIZE and the disk's reserve (503 `storage_full`).
 */

/** The refusal of a node that is shutting down (SIGTERM): it takes nothing new while it drains. */
export function shuttingDownError(unchanged = 'nothing was stored'): HooklineError {
  return new HooklineError('HOOKLINE_ERR_SHUTTING_DOWN', `this node is draining; ${unchanged}, send it again shortly (to another node, or after the restart)`);
}

/** How many more deliveries the project may have waiting now. */
export function waitingRoom(state: Pick<AdmissionState, 'waiting' | 'maxWaiting'>): number {
  return Math.max(0, state.maxWaiting - state.waiting());
}

export interface AdmissionRequest {
  /** How many deliveries the operation would make wait (0: an event no webhook wants, a retry of one not dead-lettered). */
  adding: number;
  /** What the refused operation left undone, as its message says it: "nothing was stored". */
  unchanged: string;
  /**
   * The `overloaded` refusal's message and details, given the room left, when the operation's own
   * words say more than the waiting count (a redrive names how many it would start).
   * @default "project P has N deliveries waiting, its limit (HOOKLINE_MAX_WAITING_PER_PROJECT) is M; <unchanged>, ..."
   */
  overloaded?: (room: number) => { message: string; details: ErrorDetail[] };
}

/** What the check reads of the project's actor: its waiting deliveries and their limit, its node's store, and whether it drains. */
export interface AdmissionState {
  readonly projectId: string;
  /** The project's deliveries not yet final (pending, delivering, retrying), held or on disk. */
  waiting(): number;
  readonly maxWaiting: number;
  readonly store: { isOverQuota(): boolean };
  readonly isDraining: boolean;
}

/** Why the operation may not proceed now, or null: a drain first, then the project's waiting limit, then the data's. */
export function admissionRefusal(state: AdmissionState, request: AdmissionRequest): HooklineError | null {
  if (state.isDraining) return shuttingDownError(request.unchanged);
  const room = waitingRoom(state);
  if (request.adding > room) {
    const { message, details } = request.overloaded?.(room) ?? tooManyWaiting(state, request.unchanged);
    return new HooklineError('HOOKLINE_ERR_OVERLOADED', message, { details, retryAfterSeconds: 5 });
  }
  if (state.store.isOverQuota()) {
    return new HooklineError('HOOKLINE_ERR_STORAGE_FULL', `the data directory is at HOOKLINE_MAX_DATA_SIZE or its disk is nearly full; ${request.unchanged}. Free space or raise the limit; stored events are still being delivered`, { retryAfterSeconds: 30 });
  }
  return null;
}

function tooManyWaiting(state: AdmissionState, unchanged: string): { message: string; details: ErrorDetail[] } {
  const waiting = state.waiting();
  const message = `project ${state.projectId} has ${waiting} ${waiting === 1 ? 'delivery' : 'deliveries'} waiting, its limit (HOOKLINE_MAX_WAITING_PER_PROJECT) is ${state.maxWaiting}; ${unchanged}. Send again once its endpoint takes deliveries again (after Retry-After), or raise the limit`;
  return { message, details: [{ message, projectId: state.projectId, waiting, limit: state.maxWaiting }] };
}
