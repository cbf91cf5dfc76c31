import { jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createPublishCommand } from '../../src/cli/publish.js';
import { captureIo } from '../helpers/cli.js';
import { SHARED_NATS_URL, uniqueNatsNames } from '../helpers/nats.js';
import { startNatsCluster, type TestNatsCluster } from '../helpers/nats-cluster.js';

/**
 * `hookline publish` while NATS elects a leader (issue 36): right after the server leading the
 * events stream was killed, it said "jetstream is not enabled" (nats.js's words for a publish
 * nobody answered). It now finds out why nobody answered: a stream takes the subject and has no
 * leader, so NATS is electing one; it says so, and publishes once the election is over.
 */

let cluster: TestNatsCluster | null = null;

afterEach(async () => {
  await cluster?.dispose();
  cluster = null;
});

describe('hookline publish during a NATS leader election', () => {
  it('says that NATS is electing a leader for the stream, never that JetStream is not enabled, and publishes once it has one', async () => {
    cluster = await startNatsCluster('token');
    const names = uniqueNatsNames();
    const admin = await cluster.connect();
    try {
      // The events stream as a cluster node makes it (HOOKLINE_NATS_REPLICAS=3).
      await (await jetstreamManager(admin)).streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], num_replicas: 3, duplicate_window: nanos(120_000) });
      const leader = await cluster.streamLeader(admin, names.natsStream);
      await cluster.member(leader).kill9();
    } finally {
      await admin.close();
    }

    const io = captureIo({ ...cluster.hooklineSettings(), HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix });
    const code = await createPublishCommand(io).run(['--project', 'default', '--type', 'service.trigger.event', '--data', '{}', '--id', 'evt_during_election', '--wait', '0']);

    const said = `${io.out()}${io.err()}`;
    expect(said).not.toMatch(/not enabled/i);
    // The stream's leader, or the JetStream API's (when the server killed led both).
    expect(io.err()).toMatch(new RegExp(`^hookline publish: NATS is electing (a leader for stream ${names.natsStream}|its JetStream leader \\(the JetStream API does not answer\\)) \\(a NATS server was lost or restarted\\); publishing again once it has one\n$`));
    expect(code, said).toBe(0);
    expect(io.out()).toMatch(/published evt_during_election on \S+ \(stream seq 1\)/);
  }, 120_000);

  it('with JetStream answering and no stream taking the subject, says that, naming the prefix, instead of "jetstream is not enabled"', async () => {
    const names = uniqueNatsNames();
    const io = captureIo({ HOOKLINE_NATS_URL: SHARED_NATS_URL, HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix });
    const code = await createPublishCommand(io).run(['--project', 'default', '--type', 'service.trigger.event', '--data', '{}', '--wait', '0']);
    expect(code).toBe(1);
    expect(io.err()).toBe(`hookline publish: no JetStream stream takes ${names.natsSubjectPrefix}.default: is a Hookline running with HOOKLINE_NATS_URL=${SHARED_NATS_URL} and HOOKLINE_NATS_SUBJECT_PREFIX=${names.natsSubjectPrefix} (it creates the stream)? Check --prefix\n`);
  });
});
