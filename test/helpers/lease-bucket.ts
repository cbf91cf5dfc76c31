import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { ensureKv, kvKeyLister } from '../../src/transport/nats-streams.js';
import { SHARED_NATS_URL, connectNats, deleteStreams } from './nats.js';

export interface TestLeaseBucket {
  bucket: string;
  kv: KV;
  listKeys: (filter: string) => Promise<string[]>;
  /** Deletes the bucket and closes its connection. */
  dispose(): Promise<void>;
}

/** A membership and leases KV bucket of its own on the shared NATS, as a cluster node makes one. */
export async function testLeaseBucket(prefix = 'HL_TEST_leases'): Promise<TestLeaseBucket> {
  const connection = await connectNats(SHARED_NATS_URL);
  const bucket = `${prefix}_${randomBytes(5).toString('hex')}`;
  const manager = await jetstreamManager(connection);
  return {
    bucket,
    kv: await ensureKv(connection, manager, bucket, 1),
    listKeys: kvKeyLister(manager, bucket),
    dispose: async () => {
      await deleteStreams(connection, [`KV_${bucket}`]);
      await connection.close();
    },
  };
}
