import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startTestHookline } from './hookline.js';
import type { TestHookline } from './hookline.js';
import { SHARED_NATS_URL, connectNats, deleteStreams, natsSettings, uniqueNatsNames } from './nats.js';
import type { NatsNames } from './nats.js';

export interface NatsHooklines {
  /** The test file's publisher connection to the shared NATS (open between beforeAll and afterAll). */
  connection(): NatsConnection;
  /** A test Hookline consuming its own stream and subject prefix on the shared NATS; closed, and its stream deleted, after the test. */
  start(overrides?: Parameters<typeof startTestHookline>[0]): Promise<{ hookline: TestHookline; names: NatsNames }>;
  /** Names for a stream the test makes itself, deleted after the test. */
  ownNames(): NatsNames;
}

/** Registers the hooks of a test file whose tests each run Hookline on its own stream of the shared NATS. */
export function useNatsHooklines(): NatsHooklines {
  let nc: NatsConnection | undefined;
  const streams = new Set<string>();
  const hooklines: TestHookline[] = [];

  beforeAll(async () => {
    nc = await connectNats(SHARED_NATS_URL);
  });
  afterEach(async () => {
    // Stop consuming before the stream goes, so no consumer is left polling a deleted stream.
    for (const hookline of hooklines.splice(0)) await hookline.close();
    await deleteStreams(nc!, streams);
    streams.clear();
  });
  afterAll(async () => {
    await nc?.close();
  });

  return {
    connection: () => nc!,
    ownNames() {
      const names = uniqueNatsNames();
      streams.add(names.natsStream);
      return names;
    },
    async start(overrides = {}) {
      const names = this.ownNames();
      const hookline = await startTestHookline({ ...natsSettings(SHARED_NATS_URL, names), ...overrides });
      hooklines.push(hookline);
      return { hookline, names };
    },
  };
}
