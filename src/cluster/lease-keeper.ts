import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import { HooklineError } from '../errors.js';
import type { NatsAccess } from '../transport/nats-access.js';
import { natsStartError } from '../transport/nats-start-error.js';
import type { FencedOutcome } from './lease-renewal.js';
import { LAST_TURN_SLOT, errorFrom, sharedSlots, validitySlot, type LeaseCall, type LeaseWorkerData, type LeaseWorkerMessage } from './lease-protocol.js';

/** The node's partition leases as the coordinator uses them. */
export interface CoordinatorLeases {
  readonly nodeId: string;
  /** Writes this node's heartbeat and keeps it (and every lease held) renewed: the node is a member from then on. */
  join(): Promise<void>;
  /** True while this node holds the lease and its local validity has not run out. */
  isValid(partition: number): boolean;
  /** Takes the lease when free or expired; false when another node holds it or won the race. */
  acquire(partition: number): Promise<boolean>;
  /** Gives the lease up at once (only if still ours). */
  release(partition: number): Promise<void>;
  /** Node ids whose heartbeat is within the lease time, sorted. */
  liveNodes(): Promise<string[]>;
  /** The partitions whose lease no node holds now. */
  unownedPartitions(partitions: number): Promise<number[]>;
  /** Sets who is told of each held lease a renewal found taken by another node (`lost`) or run out locally (`lapsed`). */
  onFenced(listener: (partition: number, outcome: FencedOutcome) => void): void;
  /** Leaves the membership (no more heartbeats), still renewing the leases held: the node is handing them over. */
  withdraw(): Promise<void>;
  /** Stops renewing and heartbeating, and leaves the membership. */
  leave(): Promise<void>;
}

export interface LeaseKeeperOptions {
  access: NatsAccess;
  /** The KV bucket of membership and leases (made already). */
  bucket: string;
  replicas: number;
  nodeId: string;
  partitions: number;
  leaseMs: number;
  /** Heartbeat and renewal period. */
  tickMs: number;
  /**
   * Longest the main thread's event loop may go without a turn before the leases are no longer
   * renewed: a node stuck for good must hand its partitions to the others.
   * @default the larger of 30 s and 6 lease times
   */
  maxStallMs?: number;
  /**
   * How many reconnects in a row the worker's connection may fail before nats.js gives up on it
   * (tests make it end for good this way). @default -1, reconnect forever
   */
  maxReconnectAttempts?: number;
  logger: Logger;
  /**
   * Called once if the worker's NATS connection ends for good while the node runs (logged already,
   * by the worker), or another process took the node id over, with the line naming what to fix:
   * the node renews no lease from then on.
   * @default none
   */
  onConnectionClosed?: (reason: HooklineError) => void;
}

/** A stall this long is a stuck node, not a slow one (a long GC, a restore's turn, swap). */
export const defaultMaxStallMs = (leaseMs: number): number => Math.max(30_000, 6 * leaseMs);

/**
 * The node's partition leases, kept by a worker thread (`lease-worker.ts`) with its own NATS
 * connection, so a long turn of the node's event loop never delays a renewal: before, a node whose
 * loop stalled for most of a lease (ingesting a backlog, restoring a partition) lapsed every lease
 * and handed its partitions back. `isValid` reads the validity the worker mirrors into shared
 * memory, with no message; the rest are requests to the worker. The main thread marks each tick
 * that it still turns, and the worker renews only while it does (`maxStallMs`).
 */
export class LeaseKeeper implements CoordinatorLeases {
  private readonly shared: BigInt64Array;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  /** The coordinator's: it fences what the worker reports. */
  private fencedListener: (partition: number, outcome: FencedOutcome) => void = () => {};
  private nextId = 1;
  /** Set when the worker is gone: no lease counts as valid from then on. */
  private gone: Error | null = null;
  private stopping = false;
  /** What the worker threw, if it did: logged when it exits. */
  private failure: Error | undefined;
  private leaving: Promise<void> | null = null;
  private readonly turnMarker: NodeJS.Timeout;

  private constructor(
    private readonly worker: Worker,
    shared: SharedArrayBuffer,
    readonly nodeId: string,
    private readonly logger: Logger,
    tickMs: number,
    private readonly onConnectionClosed: (reason: HooklineError) => void,
  ) {
    this.shared = new BigInt64Array(shared);
    this.markTurn();
    this.turnMarker = setInterval(() => this.markTurn(), tickMs);
    this.turnMarker.unref();
  }

  /**
   * Starts the worker; resolves once it is connected and has claimed the node id (the node joins
   * the membership with `join`). The claim waits up to a lease time after a previous incarnation
   * of the node died (`NodePresence`).
   * @throws {HooklineError} the NATS start error naming the setting, when the worker cannot connect;
   *   `HOOKLINE_ERR_NODE_ID_IN_USE` when a live node has the id
   */
  static async start(options: LeaseKeeperOptions): Promise<LeaseKeeper> {
    const shared = new SharedArrayBuffer(sharedSlots(options.partitions) * BigInt64Array.BYTES_PER_ELEMENT);
    const data: LeaseWorkerData = {
      access: options.access,
      bucket: options.bucket,
      replicas: options.replicas,
      nodeId: options.nodeId,
      leaseMs: options.leaseMs,
      tickMs: options.tickMs,
      maxStallMs: options.maxStallMs ?? defaultMaxStallMs(options.leaseMs),
      ...(options.maxReconnectAttempts !== undefined ? { maxReconnectAttempts: options.maxReconnectAttempts } : {}),
      shared,
    };
    const worker = new Worker(new URL('./lease-worker.js', import.meta.url), { workerData: data, name: 'hookline-leases' });
    const keeper = new LeaseKeeper(worker, shared, options.nodeId, options.logger, options.tickMs, options.onConnectionClosed ?? (() => {}));
    try {
      await new Promise<void>((resolve, reject) => {
        worker.on('message', (message: LeaseWorkerMessage) => {
          if (message.type === 'ready') resolve();
          else if (message.type === 'failed') reject(errorFrom(message.error));
          else keeper.receive(message);
        });
        worker.on('error', (error) => {
          keeper.failure = error;
          reject(error);
        });
        worker.on('exit', (code) => {
          reject(new Error(`the lease worker exited (code ${code}) before it was ready`));
          keeper.workerGone(code);
        });
      });
    } catch (error) {
      keeper.stopping = true;
      clearInterval(keeper.turnMarker);
      await worker.terminate();
      throw natsStartError(options.access, error);
    }
    return keeper;
  }

  private markTurn(): void {
    Atomics.store(this.shared, LAST_TURN_SLOT, BigInt(Date.now()));
  }

  private receive(message: LeaseWorkerMessage): void {
    if (message.type === 'reply') {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) waiter?.reject(errorFrom(message.error));
      else waiter?.resolve(message.result);
    } else if (message.type === 'fenced') {
      this.fencedListener(message.partition, message.outcome);
    } else if (message.type === 'closed') {
      if (!this.stopping) this.onConnectionClosed(new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', message.reason));
    } else if (message.type === 'superseded') {
      this.logger.error({}, message.reason);
      if (!this.stopping) this.onConnectionClosed(new HooklineError('HOOKLINE_ERR_NODE_ID_IN_USE', message.reason));
    } else if (message.type === 'log') {
      this.logger[message.level](message.fields, message.message);
    }
  }

  private workerGone(code: number): void {
    if (this.gone) return;
    this.gone = new Error(`the lease worker has stopped (exit code ${code})`);
    for (const waiter of this.pending.values()) waiter.reject(this.gone);
    this.pending.clear();
    // Every partition is fenced by the coordinator's watchdog: no lease counts as valid any more.
    if (!this.stopping) this.logger.error({ code, err: this.failure }, 'the partition lease worker stopped; this node acts for no partition until it is restarted');
  }

  private request<T>(call: LeaseCall): Promise<T> {
    if (this.gone) return Promise.reject(this.gone);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.worker.postMessage({ ...call, id });
    });
  }

  isValid(partition: number): boolean {
    return this.gone === null && Date.now() < Number(Atomics.load(this.shared, validitySlot(partition)));
  }

  join(): Promise<void> {
    return this.request({ op: 'join' });
  }

  /** False, too, once the worker is gone (the worker itself answers false on any failure). */
  acquire(partition: number): Promise<boolean> {
    return this.request<boolean>({ op: 'acquire', partition }).catch(() => false);
  }

  /** Nothing to give up once the worker is gone: its leases expire on their own. */
  release(partition: number): Promise<void> {
    return this.request<void>({ op: 'release', partition }).catch(() => {});
  }

  /**
   * Whether the lease bucket itself says this node holds the partition now: asked of NATS, not of
   * the local clock (`isValid`), for the rare decision a stale view must not make. False when NATS
   * does not answer.
   */
  holdsInBucket(partition: number): Promise<boolean> {
    return this.request<boolean>({ op: 'holds', partition }).catch(() => false);
  }

  liveNodes(): Promise<string[]> {
    return this.request({ op: 'liveNodes' });
  }

  /** The partitions whose lease no node holds now. */
  unownedPartitions(partitions: number): Promise<number[]> {
    return this.request({ op: 'unowned', partitions });
  }

  /** Whether every live node restores from changelog snapshots: until then, none may be written. */
  everyLiveNodeReadsSnapshots(): Promise<boolean> {
    return this.request({ op: 'everyLiveNodeReadsSnapshots' });
  }

  onFenced(listener: (partition: number, outcome: FencedOutcome) => void): void {
    this.fencedListener = listener;
  }

  withdraw(): Promise<void> {
    return this.request({ op: 'withdraw' });
  }

  leave(): Promise<void> {
    this.leaving ??= this.request({ op: 'leave' });
    return this.leaving;
  }

  /** Leaves the membership (when the worker still runs) and ends the worker. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.turnMarker);
    if (!this.gone) await this.leave().catch(() => {});
    await this.worker.terminate();
  }
}
