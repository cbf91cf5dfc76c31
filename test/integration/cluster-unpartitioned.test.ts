import { jetstream } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { createPublishCommand } from '../../src/cli/publish.js';
import { publishEvent } from '../../src/sdk/nats.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { captureIo } from '../helpers/cli.js';
import { CLUSTER_ADMIN_KEY, startTestClusterForTest } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * An event published the single-node way, on `<prefix>.<projectId>` (`hookline publish` without
 * `--partitions`), to a cluster (issue 36): no partition's consumer takes that subject, and it
 * stayed in the stream for good, never delivered nor rejected. Now it is delivered, or listed in
 * `/admin/v1/rejected-events` with its reason, within 5 s.
 */

const WITHIN_MS = 5_000;

beforeAll(() => ensureBuilt(), 120_000);

describe('events published without their partition to a cluster', () => {
  it('are delivered within 5 s (hookline publish hears the owner\'s verdict), and those that cannot be taken are listed in /admin/v1/rejected-events with their reason within 5 s', async () => {
    const receiver = await startReceiver();
    const cluster = await startTestClusterForTest({ partitions: 8, label: 'unpartitioned' });
    await cluster.startSettled(['n1', 'n2']);
    const [n1] = cluster.live();
    const project = await cluster.createProject(n1!, 'unpartitioned');
    const configured = await cluster.apiSettled(n1!, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });
    expect(configured.status).toBe(200);
    const prefix = cluster.names.natsSubjectPrefix;

    // The CLI, as the README's single-node example runs it: no --partitions.
    const io = captureIo({ HOOKLINE_NATS_URL: SHARED_NATS_URL, HOOKLINE_NATS_SUBJECT_PREFIX: prefix });
    const published = Date.now();
    const code = await createPublishCommand(io).run(['--project', project.projectId, '--type', 'service.trigger.event', '--data', '{"marker":"cli"}', '--id', 'evt_unpartitioned_cli']);
    expect(code, io.err()).toBe(0);
    expect(io.out()).toContain(`published evt_unpartitioned_cli on ${prefix}.${project.projectId}`);
    expect(io.out()).toMatch(/accepted by Hookline: evt_unpartitioned_cli in project "prj_\S+" \(delivery dlv_\S+ made\)/);
    // And through the SDK, with no id: the id made from the stream sequence.
    await publishEvent(cluster.nats, project.projectId, { type: 'service.trigger.event', data: { marker: 'sdk' } }, { subjectPrefix: prefix });
    await waitFor(() => ['cli', 'sdk'].every((marker) => receiver.received.some((delivery) => delivery.envelope.data.marker === marker)), { timeoutMs: WITHIN_MS, message: 'both events delivered' });
    expect(Date.now() - published).toBeLessThan(2 * WITHIN_MS);

    // A project that does not exist, and a body that is not an event.
    const client = jetstream(cluster.nats);
    await publishEvent(cluster.nats, 'nosuch', { type: 'service.trigger.event', data: {}, id: 'evt_unpartitioned_nosuch' }, { subjectPrefix: prefix });
    await client.publish(`${prefix}.${project.projectId}`, 'not json');
    const rejectedAt = Date.now();
    const rejections = await waitFor(
      async () => {
        const listed = [];
        for (const node of cluster.live()) listed.push(...(await cluster.api(node, 'GET', '/admin/v1/rejected-events', { key: CLUSTER_ADMIN_KEY })).body.data);
        const reasons = new Map(listed.map((record: { projectId: string; reason: string }) => [record.projectId, record.reason]));
        return reasons.get('nosuch') && reasons.get(project.projectId) ? reasons : null;
      },
      { timeoutMs: WITHIN_MS, intervalMs: 100, message: 'both rejections listed' },
    );
    expect(Date.now() - rejectedAt).toBeLessThan(WITHIN_MS);
    expect(rejections.get('nosuch')).toBe('unknown_project');
    expect(rejections.get(project.projectId)).toBe('invalid_json');
    // Each delivered once.
    expect(receiver.received.filter((delivery) => delivery.envelope.data.marker === 'cli')).toHaveLength(1);
  }, 120_000);
});
