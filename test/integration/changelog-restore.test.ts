import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChangelogRecord } from '../../src/cluster/changelog.js';
import { withSteps } from '../../src/cluster/changelog-merge.js';
import { withChanges } from '../../src/store/delivery-model.js';
import type { DeliveryChange, DeliveryRecord } from '../../src/store/records.js';
import type { HooklineStore } from '../../src/store/store.js';
import { deliveryWithTransitions, openTempStore } from '../helpers/store-fixtures.js';

/**
 * A partition's changelog laid into a real LMDB store as it is read (`ChangelogRestore`), over a
 * copy this node already holds: a node taking back a partition it owned before. Its copy is kept
 * only where it holds the changelog's history and more; where another owner's steps part from it
 * (this node's attempts made while fenced out, never replicated), the changelog's history wins.
 * The streamed restore must end as the in-memory merge does, however the entries are chunked.
 */

const PROJECT = 'p1';
const ID = 'dlv_01M80000000000000000000000';

/** The delivery as created: one transition, no attempt. */
const created = (): DeliveryRecord => deliveryWithTransitions(ID, 1, 'pending', 0);

/**
 * The steps a node made after the `shared` ones, each one transition with an attempt; `origin`
 * tells one node's transitions from another's (their times differ, as two nodes' clocks do).
 */
function history(shared: number, own: number, origin: number): DeliveryChange[] {
  return Array.from({ length: shared + own }, (_, i) => {
    const at = i < shared ? 10 + i : origin * 1_000 + i;
    const status = i % 2 === 0 ? 'delivering' : 'retrying';
    return {
      status,
      attempts: Math.ceil((i + 1) / 2),
      roundAttempts: Math.ceil((i + 1) / 2),
      roundSize: 5,
      nextAttemptAt: status === 'retrying' ? at + 100 : null,
      updatedAt: at,
      transitions: [{ from: i % 2 === 0 ? 'pending' : 'delivering', to: status, event: i % 2 === 0 ? 'START_ATTEMPT' : 'ATTEMPT_FAILED', at }],
      transitionIndex: 1 + i,
      attemptIndex: Math.floor(i / 2),
      ...(status === 'retrying' ? { attempt: { attempt: Math.ceil((i + 1) / 2), at, statusCode: 503, durationMs: 1, error: null, errorCode: null, responseBody: '' } } : {}),
    } satisfies DeliveryChange;
  });
}

/** The changelog's entries for `steps`: the record after the first `whole` of them, then the rest in groups. */
function entries(steps: DeliveryChange[], whole: number, groups: number[]): ChangelogRecord[] {
  const out: ChangelogRecord[] = [{ kind: 'delivery', projectId: PROJECT, record: withChanges(created(), steps.slice(0, whole)) }];
  let from = whole;
  for (const size of groups) {
    if (from >= steps.length) break;
    out.push({ kind: 'steps', projectId: PROJECT, record: { id: ID, changes: steps.slice(from, from + size) } });
    from += size;
  }
  if (from < steps.length) out.push({ kind: 'steps', projectId: PROJECT, record: { id: ID, changes: steps.slice(from) } });
  return out;
}

async function streamed(store: HooklineStore, changelog: ChangelogRecord[], chunks: number[]): Promise<void> {
  const restoring = store.restoring(0);
  let from = 0;
  for (const size of chunks) {
    if (from >= changelog.length) break;
    await restoring.apply(changelog.slice(from, from + size));
    from += size;
  }
  await restoring.apply(changelog.slice(from));
  await restoring.finish();
}

/**
 * The restore as a takeover runs it: paced, each entry in a transaction of its own (a slice of no
 * time), and the chunks handed on without waiting for the ones before (as `restoreInto` does, a few
 * at once), so the restore itself must lay them in one after another. Every transaction it issues
 * is counted as a commit, and settled.
 */
async function paced(store: HooklineStore, changelog: ChangelogRecord[], chunks: number[]): Promise<{ transactions: number }> {
  let issued = 0;
  let settledCount = 0;
  const pace = {
    nextTurn: () => new Promise<void>((resolve) => setImmediate(resolve)),
    commitIssued: () => void issued++,
    commitSettled: () => void settledCount++,
  };
  const restoring = store.restoring(0, pace, 0);
  const applying: Array<Promise<void>> = [];
  let from = 0;
  for (const size of chunks) {
    if (from >= changelog.length) break;
    applying.push(restoring.apply(changelog.slice(from, from + size)));
    from += size;
  }
  applying.push(restoring.apply(changelog.slice(from)));
  await Promise.all(applying);
  await restoring.finish();
  expect(settledCount).toBe(issued);
  return { transactions: issued };
}

async function inMemory(store: HooklineStore, changelog: ChangelogRecord[]): Promise<void> {
  for (const change of await withSteps(changelog)) await store.restoreRecord(PROJECT, change as Extract<typeof change, { kind: 'delivery' }>);
}

const summary = (store: HooklineStore) => {
  const record = store.getDelivery(PROJECT, ID)!;
  const retrying = [...store.deliveryIdsByStatus(PROJECT, 'retrying')];
  return { status: record.status, attempts: record.attempts, nextAttemptAt: record.nextAttemptAt, transitions: record.transitions.map((t) => t.at), attemptLog: record.attemptLog.map((a) => a.at), retrying };
};

describe('a streamed restore over this node\'s own copy', () => {
  it('takes the new owner\'s steps over attempts this node made while fenced out', async () => {
    // Both held 3 steps; this node then made 4 more it never replicated, the new owner 2 of its own.
    const mine = history(3, 4, 1);
    const theirs = history(3, 2, 2);
    const store = openTempStore();
    await store.restoreRecord(PROJECT, { kind: 'delivery', record: withChanges(created(), mine) });
    await streamed(store, entries(theirs, 1, [1, 1, 1, 1]), [2, 1, 3]);
    expect(summary(store).transitions).toEqual(withChanges(created(), theirs).transitions.map((t) => t.at));
    expect(summary(store).attemptLog).toHaveLength(withChanges(created(), theirs).attemptLog.length);
  });

  it('keeps this node\'s copy where it holds the changelog\'s history and more', async () => {
    const mine = history(5, 2, 1);
    const store = openTempStore();
    await store.restoreRecord(PROJECT, { kind: 'delivery', record: withChanges(created(), mine) });
    await streamed(store, entries(history(5, 0, 2), 2, [2, 1]), [1, 1, 1]);
    expect(summary(store).transitions).toEqual(withChanges(created(), mine).transitions.map((t) => t.at));
  });

  it('ends as the in-memory merge does, for any histories and any chunking, paced or not (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          heldHere: fc.boolean(),
          shared: fc.nat(6),
          mine: fc.nat(5),
          theirs: fc.nat(5),
          whole: fc.nat(8),
          // A snapshot read while batches went on: a batch after it holds an older version, then the steps from there.
          stale: fc.option(fc.nat(8), { nil: undefined }),
          groups: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 8 }),
          chunks: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 8 }),
        }),
        async ({ heldHere, shared, mine, theirs, whole, stale, groups, chunks }) => {
          const local = withChanges(created(), history(shared, mine, 1));
          const changelogSteps = history(shared, theirs, 2);
          const snapshotLength = Math.min(whole, changelogSteps.length);
          const changelog = stale === undefined ? entries(changelogSteps, snapshotLength, groups) : [entries(changelogSteps, snapshotLength, [])[0]!, ...entries(changelogSteps, Math.min(stale, snapshotLength), groups)];
          const viaStream = openTempStore();
          const viaMemory = openTempStore();
          const viaPaced = openTempStore();
          if (heldHere) for (const store of [viaStream, viaMemory, viaPaced]) await store.restoreRecord(PROJECT, { kind: 'delivery', record: local });
          await streamed(viaStream, changelog, chunks);
          await inMemory(viaMemory, changelog);
          const { transactions } = await paced(viaPaced, changelog, chunks);
          // One transaction an entry, and one a copy set aside and weighed at the end.
          expect(transactions).toBeGreaterThanOrEqual(changelog.length);
          expect(summary(viaPaced)).toEqual(summary(viaMemory));
          expect(viaPaced.restoreStash.getKeysCount()).toBe(0);
          const final = withChanges(created(), changelogSteps);
          // This node's copy survives only where it extends the changelog's final version.
          const keptLocal = heldHere && theirs === 0 && mine > 0;
          expect(summary(viaStream)).toEqual(summary(viaMemory));
          expect(summary(viaStream).transitions).toEqual((keptLocal ? local : final).transitions.map((t) => t.at));
          expect(summary(viaStream).retrying).toEqual((keptLocal ? local : final).status === 'retrying' ? [ID] : []);
          // Nothing is left set aside.
          expect(viaStream.restoreStash.getKeysCount()).toBe(0);
        },
      ),
      { seed: 3506, numRuns: 60 },
    );
  });
});
