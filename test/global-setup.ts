import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { SHARED_NATS_URL } from './helpers/nats.js';

/**
 * Once per `npm test`: one empty stream on the shared NATS (127.0.0.1:4222) for the whole run. The
 * tests there make and delete streams of their own at once, several files in parallel (and other
 * runs on the same server). When the last stream of the account goes, nats-server 2.9 removes the
 * account's store directory, and a stream made in that instant fails ("error creating store for
 * stream": mkdir …/jetstream/$G/streams: no such file or directory). With this one kept, the
 * directory stays. No NATS answering is left for the tests that need it to report.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const name = `HL_TEST_KEEP_${randomBytes(5).toString('hex')}`;
  const connection = await connect({ servers: SHARED_NATS_URL, timeout: 2_000, maxReconnectAttempts: 0 }).catch(() => null);
  if (!connection) return async () => {};
  const manager = await jetstreamManager(connection);
  await manager.streams.add({ name, subjects: [`hltest.keep.${name}`] }).catch(() => null);
  return async () => {
    await manager.streams.delete(name).catch(() => false);
    await connection.close();
  };
}
