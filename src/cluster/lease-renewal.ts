import type { Logger } from '../logger.js';
import type { PartitionLeases, RenewOutcome } from './leases.js';
import type { NodePresence, PresenceRecord } from './node-presence.js';

/** What the renewal loop reports: a partition this node must stop acting for, and why. */
export type FencedOutcome = Extract<RenewOutcome, 'lost' | 'lapsed'>;

export interface LeaseRenewalOptions {
  leases: PartitionLeases;
  /** The node id's presence entry, claimed already: rewritten every tick from `keepPresence` on. @default none */
  presence?: NodePresence;
  /**
   * Once, when another process has claimed the node id since (this one stalled past a lease, and
   * was taken for dead): from then on nothing is written, and no lease kept. @default none
   */
  onSuperseded?: (holder: PresenceRecord | null) => void;
  /** Heartbeat and renewal period; the lease lasts several. */
  tickMs: number;
  /**
   * When the node's own event loop last turned (ms). The loop renews only while that was within
   * `maxStallMs`: a node whose main thread is stuck for good must not keep its partitions for good.
   */
  lastTurnAt: () => number;
  maxStallMs: number;
  /** After each renewal of a held lease (its validity may have changed). */
  onRenewed: (partition: number) => void;
  onFenced: (partition: number, outcome: FencedOutcome) => void;
  logger: Pick<Logger, 'warn'>;
  now?: () => number;
}

/**
 * The node's heartbeat and the renewal of every lease it holds, each on its own every tick. It runs
 * on the lease worker's thread (`lease-worker.ts`), so no long turn of the node's event loop (a
 * restore, a big commit, a GC) can delay a renewal past the lease; the main thread only has to turn
 * once within `maxStallMs` (many leases) for the leases to be kept.
 */
export class LeaseRenewal {
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | null = null;
  private heartbeating: Promise<void> | null = null;
  private presenceWriting: Promise<void> | null = null;
  /** Logged once per stall: renewals stopped because the main thread has not turned. */
  private stallReported = false;
  /** A member of the cluster (heartbeat and renewals) from `start` on; the presence entry is kept from `keepPresence`. */
  private joined = false;
  /** False once the node withdraws from the membership (`withdraw`). */
  private heartbeats = true;
  private superseded = false;

  constructor(private readonly options: LeaseRenewalOptions) {}

  /** Keeps the presence entry written, from the claim on: a second process with the id meets it while this one starts. */
  keepPresence(): void {
    this.timer ??= setInterval(() => this.tick(), this.options.tickMs);
  }

  /** Heartbeat and renewals every tick (and the presence entry): the node is a member. */
  start(): void {
    this.joined = true;
    this.keepPresence();
  }

  /**
   * Stops heartbeating (the leases stay renewed): the node is leaving, and the others take each
   * partition as soon as it gives the lease up, instead of once it has given up all of them.
   */
  async withdraw(): Promise<void> {
    this.heartbeats = false;
    await this.heartbeating;
  }

  /** True once another process has claimed the node id: nothing may be acquired or renewed. */
  get isSuperseded(): boolean {
    return this.superseded;
  }

  private tick(): void {
    const { lastTurnAt, maxStallMs, now = Date.now } = this.options;
    const stalledMs = now() - lastTurnAt();
    if (stalledMs > maxStallMs) {
      // No heartbeat either: the cluster sees the node gone, and its partitions move once their leases expire.
      if (!this.stallReported) this.options.logger.warn({ stalledMs, maxStallMs }, "the node's event loop has not turned for too long; its partition leases are no longer renewed");
      this.stallReported = true;
      return;
    }
    this.stallReported = false;
    if (this.superseded) return;
    this.presenceWriting ??= this.writePresence().finally(() => (this.presenceWriting = null));
    if (!this.joined) return;
    // Apart: renewals that waited for a slow heartbeat's answer (1.3 s seen at load 6-13) lapsed
    // leases NATS would have renewed.
    if (this.heartbeats) this.heartbeating ??= this.heartbeat().finally(() => (this.heartbeating = null));
    this.renewing ??= this.renewRound().finally(() => (this.renewing = null));
  }

  private async writePresence(): Promise<void> {
    const { presence, onSuperseded } = this.options;
    if (!presence || (await presence.refresh()) !== 'superseded' || this.superseded) return;
    this.superseded = true;
    onSuperseded?.(await presence.holder());
  }

  async heartbeat(): Promise<void> {
    try {
      await this.options.leases.heartbeat();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'cluster heartbeat failed; retrying next tick');
    }
  }

  private async renewRound(): Promise<void> {
    const { leases, onRenewed, onFenced } = this.options;
    await Promise.all(
      leases.heldPartitions().map(async (partition) => {
        const outcome = await leases.renew(partition);
        onRenewed(partition);
        if (outcome === 'lost' || outcome === 'lapsed') onFenced(partition, outcome);
      }),
    );
  }

  /** Stops the loop; resolves once a renewal or heartbeat under way has settled. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([this.renewing, this.heartbeating, this.presenceWriting]);
  }
}
