import { isTerminalDelivery } from '../machines/index.js';
import type { DeadLetterFilter } from './delivery-query.js';
import { idLowerBound } from './ids.js';
import type { DeliveryRecord } from './records.js';

/**
 * The one retention rule (`HOOKLINE_RETENTION`, counted from a delivery's creation). A terminal
 * delivery past it is gone as of now, whether or not the prune (every 10 minutes) has deleted it:
 * the prune takes it, a cluster's changelog snapshot leaves it out, and retry and redrive no longer
 * see it, so that what recovery may touch never hangs on the prune's timer.
 */

/** Ids of deliveries created before this, at `now`, are past retention. */
export function retentionCutoffId(now: number, retentionMs: number): string {
  return idLowerBound('dlv', now - retentionMs);
}

/** Whether the delivery is gone for retention: terminal and created before `cutoffId`. Live ones never are. */
export function isPastRetention(record: Pick<DeliveryRecord, 'id' | 'status'>, cutoffId: string): boolean {
  return isTerminalDelivery(record.status) && record.id < cutoffId;
}

/** The filter narrowed to the dead letters within retention (a dead letter is terminal: its id alone decides). */
export function withinRetention(filter: DeadLetterFilter, cutoffId: string): DeadLetterFilter {
  return filter.fromId !== undefined && filter.fromId > cutoffId ? filter : { ...filter, fromId: cutoffId };
}
