import { setImmediate as nextTurn } from 'node:timers/promises';
import { withChanges } from '../store/delivery-model.js';
import type { DeliveryChange } from '../store/records.js';
import { RECORDS_PER_TURN, type ChangelogRecord, type RestoredChange } from './changelog-entries.js';

/**
 * The records with each delivery's steps applied in transition order. Steps its record already
 * holds are skipped; a gap (steps whose append failed) ends them, so a record never skips a step
 * (the writer appends the whole record after such a failure). Steps without a record, and those
 * after a gap, are dropped.
 */
export async function withSteps(changes: Iterable<ChangelogRecord>): Promise<RestoredChange[]> {
  const records: RestoredChange[] = [];
  const steps = new Map<string, { projectId: string; id: string; changes: DeliveryChange[] }>();
  let count = 0;
  for (const change of changes) {
    if (++count % RECORDS_PER_TURN === 0) await nextTurn();
    if (change.kind !== 'steps') records.push(change);
    else {
      const key = `${change.projectId}.${change.record.id}`;
      const list = steps.get(key);
      if (list) list.changes.push(...change.record.changes);
      else steps.set(key, { projectId: change.projectId, id: change.record.id, changes: [...change.record.changes] });
    }
  }
  const applied: RestoredChange[] = [];
  for (const change of records) {
    if (++count % RECORDS_PER_TURN === 0) await nextTurn();
    const list = change.kind === 'delivery' ? steps.get(`${change.projectId}.${change.record.id}`) : undefined;
    if (!list || change.kind !== 'delivery') {
      applied.push(change);
      continue;
    }
    steps.delete(`${change.projectId}.${change.record.id}`);
    list.changes.sort((a, b) => a.transitionIndex - b.transitionIndex);
    let next = change.record.transitions.length;
    const contiguous: DeliveryChange[] = [];
    for (const step of list.changes) {
      if (step.transitionIndex < next) continue;
      if (step.transitionIndex > next) break;
      contiguous.push(step);
      next += step.transitions.length;
    }
    applied.push({ ...change, record: withChanges(change.record, contiguous) });
  }
  return applied;
}

/**
 * The records less the deliveries of ingests that were taken back. An append whose answer never
 * came (it timed out) may be stored all the same, while the node took its event back and answered
 * 503; the sender's retry then made the event anew, with a new delivery. An event's latest version
 * lists every delivery made for it (an ingest's, then each replay's), so a delivery that its
 * restored event does not list is such a leftover: restored, it would be sent again under another
 * `webhook-id`. A delivery whose event is not in the changelog is kept.
 */
export function withoutTakenBack(records: RestoredChange[]): RestoredChange[] {
  const deliveriesOf = new Map<string, readonly string[]>();
  for (const change of records) if (change.kind === 'event') deliveriesOf.set(`${change.projectId}.${change.record.id}`, change.record.deliveryIds);
  return records.filter((change) => change.kind !== 'delivery' || (deliveriesOf.get(`${change.projectId}.${change.record.eventId}`)?.includes(change.record.id) ?? true));
}
