import { parentPort, workerData } from 'node:worker_threads';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { connectNats } from '../transport/nats-connection.js';
import { ensureKv, kvKeyLister, reachJetStream } from '../transport/nats-streams.js';
import { LeaseRenewal } from './lease-renewal.js';
import { PartitionLeases } from './leases.js';
import { NodePresence, describePresence } from './node-presence.js';
import { LAST_TURN_SLOT, errorFields, validitySlot, type LeaseRequest, type LeaseWorkerData, type LeaseWorkerMessage } from './lease-protocol.js';

/**
 * The lease worker's thread: its own NATS connection, the node's `PartitionLeases`, and the loop that
 * renews them (`LeaseRenewal`). Each lease's local validity is mirrored into memory shared with the
 * main thread, which reads it without a message (`LeaseKeeper.isValid`); acquisitions, releases and
 * membership reads are requests from the main thread. Its logs go to the node's logger.
 */

const data = workerData as LeaseWorkerData;
const port = parentPort!;
const shared = new BigInt64Array(data.shared);
const post = (message: LeaseWorkerMessage) => port.postMessage(message);

const logAt = (level: 'info' | 'warn' | 'error') => (fields: object, message?: string) => {
  const { err, ...rest } = fields as Record<string, unknown>;
  // `thread` tells its lines from the main thread's (both connections report NATS outages).
  post({ type: 'log', level, message: message ?? '', fields: { thread: 'leases', ...rest, ...(err !== undefined ? { err: errorFields(err) } : {}) } });
};
const logger: Logger = { info: logAt('info'), warn: logAt('warn'), error: logAt('error') };

let connection: NatsConnection | undefined;
let leases: PartitionLeases;
let presence: NodePresence;
let renewal: LeaseRenewal;

// Whole milliseconds: BigInt() throws on a fraction.
const mirror = (partition: number) => Atomics.store(shared, validitySlot(partition), BigInt(Math.floor(leases.validUntil(partition))));

async function answer(request: LeaseRequest): Promise<unknown> {
  switch (request.op) {
    case 'join':
      // In the membership before the node's first rebalancing reads it.
      await renewal.heartbeat();
      renewal.start();
      return null;
    case 'acquire': {
      // Superseded, a twin holds the id: with the same id its leases would look like this node's own.
      const acquired = !renewal.isSuperseded && (await leases.acquire(request.partition));
      mirror(request.partition);
      return acquired;
    }
    case 'release':
      await leases.release(request.partition);
      mirror(request.partition);
      return null;
    case 'holds':
      return !renewal.isSuperseded && (await leases.holder(request.partition)) === data.nodeId;
    case 'liveNodes':
      return leases.liveNodes();
    case 'unowned':
      return leases.unowned(request.partitions);
    case 'everyLiveNodeReadsSnapshots':
      return leases.everyLiveNodeReadsSnapshots();
    case 'withdraw':
      await renewal.withdraw();
      await leases.leave();
      return null;
    case 'leave':
      await renewal.stop();
      await leases.leave().catch(() => {});
      // After the membership: a restart under the same id may start at once.
      await presence.withdraw();
      await connection?.close().catch(() => {});
      return null;
  }
}

async function start(): Promise<void> {
  try {
    connection = await connectNats(data.access, {
      name: `hookline-${data.nodeId}-leases`,
      noAsyncTraces: true,
      ...(data.maxReconnectAttempts !== undefined ? { maxReconnectAttempts: data.maxReconnectAttempts } : {}),
      logger,
      stops: "this node's partition leases are no longer renewed (it acts for none once they lapse)",
      onClosed: (reason) => post({ type: 'closed', reason: reason.message }),
    });
    const manager = await reachJetStream(connection, logger);
    const kv = await ensureKv(connection, manager, data.bucket, data.replicas, logger);
    leases = new PartitionLeases(kv, kvKeyLister(manager, data.bucket), data.nodeId, data.leaseMs);
    // Before anything is written under the node id: a live node with the same id refuses this start.
    presence = new NodePresence({ kv, nodeId: data.nodeId, leaseMs: data.leaseMs, log: logger });
    await presence.claim();
    renewal = new LeaseRenewal({
      leases,
      presence,
      onSuperseded: (holder) =>
        post({
          type: 'superseded',
          reason: `HOOKLINE_NODE_ID=${data.nodeId} was taken over by another process${holder ? ` (${describePresence(holder)})` : ''} while this one did not write its presence for over a lease time (HOOKLINE_LEASE_TTL); this node acts for no partition any more: stop it`,
        }),
      tickMs: data.tickMs,
      lastTurnAt: () => Number(Atomics.load(shared, LAST_TURN_SLOT)),
      maxStallMs: data.maxStallMs,
      onRenewed: mirror,
      onFenced: (partition, outcome) => post({ type: 'fenced', partition, outcome }),
      logger,
    });
    renewal.keepPresence();
  } catch (error) {
    post({ type: 'failed', error: errorFields(error) });
    await connection?.close().catch(() => {});
    return;
  }
  port.on('message', (request: LeaseRequest) => {
    answer(request).then(
      (result) => post({ type: 'reply', id: request.id, result }),
      (error: unknown) => post({ type: 'reply', id: request.id, error: errorFields(error) }),
    );
  });
  post({ type: 'ready' });
}

void start();
