import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KV } from '@nats-io/kv';
import { HooklineError } from '../errors.js';
import { retrying, type SetupLog } from '../transport/nats-streams.js';

/**
 * Which process runs as a node id: the entry `presence.<nodeId>` of the leases bucket, written by
 * the node's lease worker from the start of its process on (before it joins the membership), every
 * tick, by compare-and-set on the revision it last wrote.
 *
 * A start claims the entry. One written by another process (another incarnation) within the lease
 * time is watched for one lease time: written again, that process is alive and this start is
 * refused (`HOOKLINE_ERR_NODE_ID_IN_USE`); left alone, it is the record of a process that died (a
 * kill -9 leaves it), and the start takes it over. A graceful stop deletes it, so a restart after
 * SIGTERM claims at once; after a kill -9 it waits up to one lease time. Two processes starting
 * with one id at the same instant both write by compare-and-set: one wins, the other sees its
 * writes and is refused. A process that lost its entry while it ran (stalled past a lease, and a
 * new process took its id over) is superseded: it must stop acting for the cluster.
 */

export interface PresenceRecord {
  nodeId: string;
  /** Random per process: tells a restarted node from its previous incarnation. */
  incarnation: string;
  host: string;
  pid: number;
  startedAt: number;
  heartbeatAt: number;
}

export type PresenceOutcome = 'kept' | 'superseded' | 'unknown';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The presence entry's key of a node. */
export const presenceKey = (nodeId: string): string => `presence.${nodeId}`;

/** The other process, as a refusal names it. */
export function describePresence(record: PresenceRecord): string {
  return `host ${record.host}, pid ${record.pid}, running since ${new Date(record.startedAt).toISOString()}`;
}

export interface NodePresenceOptions {
  kv: KV;
  nodeId: string;
  leaseMs: number;
  /** How often a claim looks again at another process's entry. @default a quarter of leaseMs, at least 50 ms */
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Where a claim's retries are reported. */
  log?: SetupLog;
}

export class NodePresence {
  readonly incarnation = randomBytes(8).toString('hex');
  private readonly startedAt: number;
  private revision = 0;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: NodePresenceOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.startedAt = this.now();
  }

  private get key(): string {
    return presenceKey(this.options.nodeId);
  }

  private record(): Uint8Array {
    return encoder.encode(JSON.stringify({ nodeId: this.options.nodeId, incarnation: this.incarnation, host: hostname(), pid: process.pid, startedAt: this.startedAt, heartbeatAt: this.now() } satisfies PresenceRecord));
  }

  /**
   * Takes the node id for this process, waiting up to one lease time when another process wrote it
   * within the lease time.
   * @throws {HooklineError} `HOOKLINE_ERR_NODE_ID_IN_USE` when that process writes it again: it is alive
   */
  claim(): Promise<void> {
    // Retried as the setup steps before it: a node started again while its NATS server was cut off
    // from its peers met "jetstream is not enabled" on the entry's read, and exited (nemesis, seed 1).
    return retrying(`claiming HOOKLINE_NODE_ID=${this.options.nodeId}`, () => this.claimOnce(), this.options.log);
  }

  private async claimOnce(): Promise<void> {
    const { kv, leaseMs } = this.options;
    const pollMs = this.options.pollMs ?? Math.max(50, Math.floor(leaseMs / 4));
    for (;;) {
      const entry = await kv.get(this.key);
      if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) {
        if (await this.write(() => kv.create(this.key, this.record()))) return;
        continue;
      }
      const other = JSON.parse(decoder.decode(entry.value)) as PresenceRecord;
      // This process's own write, whose answer was lost before the claim was tried again.
      if (other.incarnation === this.incarnation) {
        this.revision = entry.revision;
        return;
      }
      // Written within the lease time (by its clock): watch it for one lease time (by ours).
      if (this.now() - other.heartbeatAt <= leaseMs) {
        const watchUntil = this.now() + leaseMs;
        let rewritten = false;
        while (!rewritten && this.now() < watchUntil) {
          await this.sleep(pollMs);
          const again = await kv.get(this.key);
          rewritten = again?.revision !== entry.revision;
        }
        if (rewritten) {
          const again = await kv.get(this.key);
          if (again && again.operation === 'PUT' && again.value.length > 0) {
            const live = JSON.parse(decoder.decode(again.value)) as PresenceRecord;
            throw new HooklineError(
              'HOOKLINE_ERR_NODE_ID_IN_USE',
              `HOOKLINE_NODE_ID=${this.options.nodeId} is in use by a live node (${describePresence(live)}): give this node its own HOOKLINE_NODE_ID, or stop that one first`,
              { details: [{ path: 'HOOKLINE_NODE_ID', message: `in use by ${describePresence(live)}` }] },
            );
          }
          continue; // deleted meanwhile (that node stopped): claim it
        }
      }
      // Its process stopped writing it: a previous incarnation that died.
      if (await this.write(() => kv.update(this.key, this.record(), entry.revision))) return;
    }
  }

  /** A compare-and-set write; false when another process wrote the entry first. */
  private async write(put: () => Promise<number>): Promise<boolean> {
    try {
      this.revision = await put();
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }

  /** Writes the entry again; `superseded` when another process has claimed the node id since. */
  async refresh(): Promise<PresenceOutcome> {
    try {
      this.revision = await this.options.kv.update(this.key, this.record(), this.revision);
      return 'kept';
    } catch (error) {
      if (!isWrongRevision(error)) return 'unknown';
      // A write of ours whose answer was lost (it timed out while NATS was slow or electing, and was
      // stored all the same) moved the revision: the entry still names this process, so nobody took
      // the id over. Taken for superseded, it stopped every node of a loaded nemesis run (finding 9).
      // A read that fails says nothing: NATS cut off, after the lost answer, is the usual case, and
      // taken for an entry gone it stopped a node for good in a seed-5 run after finding 9's fix.
      const entry = await this.options.kv.get(this.key).catch(() => undefined);
      if (entry === undefined) return 'unknown';
      if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return 'superseded';
      if ((JSON.parse(decoder.decode(entry.value)) as PresenceRecord).incarnation !== this.incarnation) return 'superseded';
      this.revision = entry.revision;
      return 'unknown';
    }
  }

  /** The process holding the node id now, if another: who superseded this one. */
  async holder(): Promise<PresenceRecord | null> {
    const entry = await this.options.kv.get(this.key).catch(() => null);
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
    const record = JSON.parse(decoder.decode(entry.value)) as PresenceRecord;
    return record.incarnation === this.incarnation ? null : record;
  }

  /** Gives the node id up (a graceful stop), unless another process has it now. */
  async withdraw(): Promise<void> {
    await this.options.kv.delete(this.key, { previousSeq: this.revision }).catch(() => {});
  }
}

/** JetStream's "wrong last sequence" (API error 10071), or a create of a key that exists: someone else wrote it first. */
export function isWrongRevision(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10071 || code === 10164 || /wrong last sequence|key exists/i.test(String(message));
}
