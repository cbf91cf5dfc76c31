import type { ExecutedFault } from './nemesis.js';
import type { ProducedEvent } from './producers.js';
import type { Receipt } from './receivers.js';

/**
 * The checks, run once the faults are healed and delivery has settled: a pure function of the
 * history (what the producers sent and had acknowledged, what the receivers got, what each node's
 * API says about every delivery, when the faults were), so the same history always gives the same
 * verdict. See docs/nemesis.md for why each check holds in Hookline's model.
 */

export const CHECKS = {
  'acked-lost': 'an acknowledged event never reached its receiver (no verified 2xx receipt)',
  'acked-delivery-unknown': "an acknowledged event's delivery (or any delivery for it) is unknown to the cluster",
  'succeeded-without-receipt': 'a delivery is recorded succeeded, but its receiver never answered 2xx to a verified request with its webhook-id',
  'not-final': 'a delivery is neither final (succeeded, dead_lettered) nor scheduled (retrying, due at a time to come)',
  'nodes-disagree': "two nodes' APIs give a different status or attempt count for a delivery, or one lists a delivery the other does not",
  'node-unreadable': "a node's API could not list the deliveries after the heal",
  'unverified-receipt': "a request reached a receiver whose Standard Webhooks signature did not verify with the project's secret",
  'unknown-event': 'a receiver got an event no producer sent',
  'duplicate-outside-faults': 'an event was received twice (2xx) while no fault was near: at-least-once does not explain it',
  'unexpected-exit': 'a node process exited that the nemesis did not kill',
  'not-settled': 'delivery had not settled when the wait for it ended',
  'partition-bypassed': 'a NATS route went around the link proxies, so the partitions were not real (a fault of the nemesis, not of Hookline)',
  'stream-sequence-reused': 'JetStream acknowledged two events at the same stream sequence: the ingest stream lost acknowledged messages (a fault of NATS, not of Hookline)',
} as const;

export type CheckName = keyof typeof CHECKS;

export interface Violation {
  check: CheckName;
  message: string;
  eventId?: string;
  deliveryId?: string;
  project?: string;
  /** Evidence added after the checks: the delivery as the API shows it, log lines. */
  evidence?: string[];
}

/** One delivery as one node's API lists it. */
export interface DeliveryView {
  id: string;
  project: string;
  eventId: string;
  status: string;
  attempts: number;
  /** Epoch ms, or null. */
  nextAttemptAt: number | null;
}

export interface NodeView {
  nodeId: string;
  /** Every delivery of every project, by id; null when the node could not be read. */
  deliveries: Map<string, DeliveryView> | null;
  error: string | null;
}

export interface Duplicate {
  /** `delivery`: one webhook-id answered 2xx more than once; `event`: one event under several webhook-ids. */
  kind: 'delivery' | 'event';
  eventId: string;
  webhookIds: string[];
  /** The 2xx receipts, from the start of the run (ms). */
  receiptsMs: number[];
  /**
   * The fault whose window holds the first receipt; `sender-timeout` when the first reached its
   * receiver after its sender had given that attempt up, so the retry was due; null when nothing
   * explains it.
   */
  explainedBy: number | 'sender-timeout' | null;
}

export interface DuplicateWindow {
  /** A fault's window opens this long before it began: an attempt in flight then was already on its way. */
  beforeMs: number;
  /** And closes this long after it ended: leases expire, a new owner restores and resends. */
  afterMs: number;
}

export interface CheckInput {
  events: readonly ProducedEvent[];
  receipts: readonly Receipt[];
  views: readonly NodeView[];
  faults: readonly ExecutedFault[];
  /** Epoch ms of the start of the run and of the checks. */
  startedAt: number;
  checkedAt: number;
  window: DuplicateWindow;
  /** A `retrying` delivery due longer ago than this is not scheduled but stuck. */
  overdueMs: number;
  /** The nodes' HOOKLINE_DELIVERY_TIMEOUT: an attempt received later than this after it was signed had been given up. */
  senderTimeoutMs: number;
  settled: boolean;
  /** Problems found outside the history: unexpected exits, bypassed routes. */
  otherViolations: readonly Violation[];
}

export interface CheckResult {
  violations: Violation[];
  duplicates: Duplicate[];
  counts: {
    sent: number;
    acked: number;
    ackedHttp: number;
    ackedNats: number;
    requests: number;
    receipts: number;
    deliveredEvents: number;
    deliveries: number;
    byStatus: Record<string, number>;
    duplicates: number;
    explainedDuplicates: number;
  };
}

const isReceipt = (receipt: Receipt) => receipt.verified && receipt.status >= 200 && receipt.status < 300;
const FINAL_STATUSES = new Set(['succeeded', 'dead_lettered']);

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

/** The id of the first fault whose window holds `atMs` (from the start of the run), or null. */
function faultNear(atMs: number, faults: readonly ExecutedFault[], window: DuplicateWindow, endMs: number): number | null {
  for (const fault of faults) {
    if (fault.startedMs === null) continue;
    if (atMs >= fault.startedMs - window.beforeMs && atMs <= (fault.endedMs ?? endMs) + window.afterMs) return fault.id;
  }
  return null;
}

export function checkHistory(input: CheckInput): CheckResult {
  const violations: Violation[] = [...input.otherViolations];
  const sinceStart = (epochMs: number) => epochMs - input.startedAt;
  const sent = new Map(input.events.map((event) => [event.id, event]));
  const receipts = input.receipts.filter(isReceipt);
  const receiptsByEvent = groupBy(receipts, (receipt) => receipt.eventId);
  const receiptsByWebhookId = groupBy(receipts, (receipt) => receipt.webhookId);

  if (!input.settled) violations.push({ check: 'not-settled', message: 'delivery had not settled when the wait for it ended: the checks below read a cluster still at work' });

  for (const receipt of input.receipts) {
    if (!receipt.verified) violations.push({ check: 'unverified-receipt', message: `${receipt.webhookId} for ${receipt.eventId} at ${sinceStart(receipt.receivedAt)} ms did not verify`, eventId: receipt.eventId, deliveryId: receipt.webhookId, project: receipt.project });
    if (!sent.has(receipt.eventId)) violations.push({ check: 'unknown-event', message: `${receipt.webhookId} carried event ${JSON.stringify(receipt.eventId)}, which no producer sent`, deliveryId: receipt.webhookId, project: receipt.project });
  }

  const bySequence = groupBy(input.events.filter((event) => event.natsSeq !== null && event.ackedAt !== null), (event) => String(event.natsSeq));
  for (const [seq, group] of bySequence) {
    if (group.length > 1) violations.push({ check: 'stream-sequence-reused', message: `JetStream acknowledged ${group.map((event) => `${event.id} at ${sinceStart(event.ackedAt!)} ms`).join(' and ')} all at stream sequence ${seq}`, eventId: group[group.length - 1]!.id, project: group[group.length - 1]!.project });
  }

  const [reference, ...others] = input.views;
  const deliveries = reference?.deliveries ?? new Map<string, DeliveryView>();
  for (const view of input.views) if (!view.deliveries) violations.push({ check: 'node-unreadable', message: `${view.nodeId}: ${view.error ?? 'no answer'}` });
  const deliveriesByEvent = groupBy([...deliveries.values()], (delivery) => delivery.eventId);

  for (const event of input.events) {
    if (event.ackedAt === null) continue;
    const where = { eventId: event.id, project: event.project, ...(event.deliveryId ? { deliveryId: event.deliveryId } : {}) };
    const acked = `${event.via} event ${event.id} acknowledged at ${sinceStart(event.ackedAt)} ms${event.ackedBy ? ` by ${event.ackedBy}` : ''}`;
    if (!receiptsByEvent.has(event.id)) violations.push({ check: 'acked-lost', message: `${acked} has no verified 2xx receipt`, ...where });
    if (reference?.deliveries) {
      const known = deliveriesByEvent.get(event.id) ?? [];
      if (known.length === 0) violations.push({ check: 'acked-delivery-unknown', message: `${acked}: no node lists a delivery for it`, ...where });
      else if (event.deliveryId && !known.some((delivery) => delivery.id === event.deliveryId)) {
        violations.push({ check: 'acked-delivery-unknown', message: `${acked} as delivery ${event.deliveryId}, which is not listed; listed for it: ${known.map((delivery) => delivery.id).join(', ')}`, ...where });
      }
    }
  }

  for (const delivery of deliveries.values()) {
    const where = { eventId: delivery.eventId, deliveryId: delivery.id, project: delivery.project };
    if (delivery.status === 'succeeded' && !receiptsByWebhookId.has(delivery.id)) {
      violations.push({ check: 'succeeded-without-receipt', message: `${delivery.id} (event ${delivery.eventId}) is succeeded after ${delivery.attempts} attempts, but no verified request with its webhook-id was answered 2xx`, ...where });
    }
    const scheduled = delivery.status === 'retrying' && delivery.nextAttemptAt !== null && delivery.nextAttemptAt >= input.checkedAt - input.overdueMs;
    if (!FINAL_STATUSES.has(delivery.status) && !scheduled) {
      const due = delivery.nextAttemptAt === null ? 'no next attempt' : `next attempt due ${input.checkedAt - delivery.nextAttemptAt} ms ago`;
      violations.push({ check: 'not-final', message: `${delivery.id} (event ${delivery.eventId}) is ${delivery.status}, ${due}, after ${delivery.attempts} attempts`, ...where });
    }
  }

  for (const view of others) {
    if (!view.deliveries || !reference?.deliveries) continue;
    for (const [id, mine] of deliveries) {
      const theirs = view.deliveries.get(id);
      const where = { eventId: mine.eventId, deliveryId: id, project: mine.project };
      if (!theirs) violations.push({ check: 'nodes-disagree', message: `${id} is listed by ${reference.nodeId} (${mine.status}, ${mine.attempts} attempts) but not by ${view.nodeId}`, ...where });
      else if (theirs.status !== mine.status || theirs.attempts !== mine.attempts) {
        violations.push({ check: 'nodes-disagree', message: `${id}: ${reference.nodeId} says ${mine.status} after ${mine.attempts} attempts, ${view.nodeId} says ${theirs.status} after ${theirs.attempts}`, ...where });
      }
    }
    for (const [id, theirs] of view.deliveries) {
      if (!deliveries.has(id)) violations.push({ check: 'nodes-disagree', message: `${id} is listed by ${view.nodeId} (${theirs.status}) but not by ${reference.nodeId}`, eventId: theirs.eventId, deliveryId: id, project: theirs.project });
    }
  }

  const endMs = sinceStart(input.checkedAt);
  const duplicates: Duplicate[] = [];
  const noteDuplicate = (kind: Duplicate['kind'], eventId: string, group: readonly Receipt[]) => {
    const ordered = [...group].sort((a, b) => a.receivedAt - b.receivedAt);
    const receiptsMs = ordered.map((receipt) => sinceStart(receipt.receivedAt));
    const first = ordered[0]!;
    // webhook-timestamp is in whole seconds: a second's slack.
    const senderGaveUp = first.receivedAt - first.signedAt > input.senderTimeoutMs + 1_000;
    const explainedBy = faultNear(receiptsMs[0]!, input.faults, input.window, endMs) ?? (senderGaveUp ? 'sender-timeout' : null);
    const webhookIds = [...new Set(ordered.map((receipt) => receipt.webhookId))];
    duplicates.push({ kind, eventId, webhookIds, receiptsMs, explainedBy });
    if (explainedBy === null) {
      violations.push({ check: 'duplicate-outside-faults', message: `event ${eventId} was received ${ordered.length} times (${webhookIds.join(', ')}) at ${receiptsMs.join(', ')} ms, the first far from every fault`, eventId, deliveryId: webhookIds[0]!, project: ordered[0]!.project });
    }
  };
  for (const group of receiptsByWebhookId.values()) if (group.length > 1) noteDuplicate('delivery', group[0]!.eventId, group);
  for (const [eventId, group] of receiptsByEvent) {
    const firstOfEach = [...groupBy(group, (receipt) => receipt.webhookId).values()].map((each) => each[0]!);
    if (firstOfEach.length > 1) noteDuplicate('event', eventId, firstOfEach);
  }

  const byStatus: Record<string, number> = {};
  for (const delivery of deliveries.values()) byStatus[delivery.status] = (byStatus[delivery.status] ?? 0) + 1;
  const ackedEvents = input.events.filter((event) => event.ackedAt !== null);
  return {
    violations,
    duplicates,
    counts: {
      sent: input.events.length,
      acked: ackedEvents.length,
      ackedHttp: ackedEvents.filter((event) => event.via === 'http').length,
      ackedNats: ackedEvents.filter((event) => event.via === 'nats').length,
      requests: input.receipts.length,
      receipts: receipts.length,
      deliveredEvents: receiptsByEvent.size,
      deliveries: deliveries.size,
      byStatus,
      duplicates: duplicates.length,
      explainedDuplicates: duplicates.filter((duplicate) => duplicate.explainedBy !== null).length,
    },
  };
}
