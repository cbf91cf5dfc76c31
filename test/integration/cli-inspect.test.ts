import { describe, expect, it } from 'vitest';
import { createInspectCommand } from '../../src/cli/inspect.js';
import { machineGraph } from '../../src/diagram/index.js';
import { matchPath } from '../../src/inspect/timeline.js';
import { captureIo } from '../helpers/cli.js';
import { API_KEY, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** `hookline inspect` prints a delivery's transitions, from the API, beside the delivery machine. */

async function failedOnceThenSucceeded() {
  const hookline = await startTestHookline();
  const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
  await configureReceiver(hookline, receiver);
  const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
  const detail = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
  return { hookline, sent, detail };
}

describe('hookline inspect', () => {
  it("prints the delivery's path and the machine's edges as two tables, and the path", async () => {
    const { hookline, sent, detail } = await failedOnceThenSucceeded();
    const io = captureIo({ HOOKLINE_URL: hookline.url, HOOKLINE_API_KEY: API_KEY });
    expect(await createInspectCommand(io).run([sent.deliveryId!])).toBe(0);
    const out = io.out();
    expect(out).toContain(`delivery ${sent.deliveryId} of event ${sent.id} (service.trigger.event)`);
    expect(out).toContain('status succeeded after 2 of at most 3 attempts');
    expect(out).toContain('path: [*] → pending → delivering → failed → retrying → delivering → succeeded');
    // Two tables, one under the other, each under its own heading and header row.
    const [, pathTable, edgeTable] = out.split(/\n\n/);
    const pathRows = pathTable!.split('\n');
    expect(pathRows[0]).toBe("The delivery's path (6 transitions):");
    expect(pathRows[1]).toMatch(/^at \(\d{4}-\d{2}-\d{2}\) +since +transition +event +attempt$/);
    expect(pathRows.slice(2).map((row) => / (\S+ → \S+) /.exec(row)?.[1])).toEqual(['[*] → pending', 'pending → delivering', 'delivering → failed', 'failed → retrying', 'retrying → delivering', 'delivering → succeeded']);
    expect(pathRows[2]).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} +\+0 ms +\[\*\] → pending +CREATED$/);
    expect(pathTable).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} +\+\d+ ms +delivering → failed +ATTEMPT_FAILED +attempt 1: HTTP 500 in \d+ ms$/m);
    expect(pathTable).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} +\+\d+ ms +failed → retrying +ATTEMPT_FAILED$/m);
    expect(pathTable).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} +\+\d+ ms +delivering → succeeded +ATTEMPT_SUCCEEDED +attempt 2: HTTP 204 in \d+ ms$/m);
    // No edge of the machine in the path's rows, no moment of the delivery in the edges' rows.
    expect(pathTable).not.toContain('REDRIVE');
    const edgeRows = edgeTable!.split('\n');
    expect(edgeRows[0]).toBe("The delivery machine's edges (14 edges), × how often this delivery took each:");
    expect(edgeRows[1]).toMatch(/^taken +edge +on$/);
    expect(edgeRows[2]).toMatch(/^1× +\[\*\] → pending +\(created\)$/);
    expect(edgeTable).toMatch(/^1× +pending → delivering +START_ATTEMPT$/m);
    expect(edgeTable).toMatch(/^1× +failed → retrying +always \[hasAttemptsLeft\] \/ scheduleRetry$/m);
    expect(edgeTable).toMatch(/^1× +retrying → delivering +START_ATTEMPT$/m);
    expect(edgeTable).toMatch(/^· +pending → failed +CIRCUIT_OPEN \/ countAttempt$/m);
    expect(edgeTable).toMatch(/^· +retrying → failed +CIRCUIT_OPEN \/ countAttempt$/m);
    expect(edgeTable).toMatch(/^· +dead_lettered → pending +REDRIVE \/ startRound$/m);
    expect(edgeTable).not.toMatch(/\d{2}:\d{2}:\d{2}/);
    expect(out).not.toContain('not in the machine');
    // Every recorded transition is an edge of the machine.
    expect(matchPath(machineGraph('delivery'), detail).every((step) => step.known)).toBe(true);
  });

  it('puts each attempt on the transition it caused, a 410 (counted outside the round) included', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 410 : 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    // The 410 disables the endpoint and holds the delivery `pending`; enabling it again sends it.
    await waitFor(async () => (await hookline.client.getWebhook()).status === 'disabled' || null, { message: 'the endpoint disabled by its 410' });
    await configureReceiver(hookline, receiver);
    const detail = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    const withAttempts = matchPath(machineGraph('delivery'), detail).filter((step) => step.attempt !== null);
    expect(withAttempts.map((step) => [step.transition.event, step.attempt!.statusCode])).toEqual([['ATTEMPT_GONE', 410], ['ATTEMPT_SUCCEEDED', 204]]);
  });

  it('draws the path on the Mermaid diagram, and gives JSON', async () => {
    const { hookline, sent } = await failedOnceThenSucceeded();
    const mermaid = captureIo();
    expect(await createInspectCommand(mermaid).run([sent.deliveryId!, '--url', hookline.url, '--api-key', API_KEY, '--format', 'mermaid'])).toBe(0);
    // The creation is an edge of the path like any other (the text format counts it \`1× [*] → pending\`).
    expect(mermaid.out()).toContain('    [*] --> pending: created ×1\n');
    expect(mermaid.out()).toContain('    delivering --> failed: ATTEMPT_FAILED / countAttempt ×1\n');
    expect(mermaid.out()).toContain('    class pending,delivering,failed,retrying,succeeded visited\n');
    expect(mermaid.out()).toContain('    dead_lettered --> pending: REDRIVE / startRound\n');
    const json = captureIo();
    expect(await createInspectCommand(json).run([sent.deliveryId!, '--url', hookline.url, '--api-key', API_KEY, '--format', 'json'])).toBe(0);
    const parsed = JSON.parse(json.out()) as { delivery: { id: string }; path: { to: string; known: boolean }[] };
    expect(parsed.delivery.id).toBe(sent.deliveryId);
    expect(parsed.path.map((step) => step.to)).toEqual(['pending', 'delivering', 'failed', 'retrying', 'delivering', 'succeeded']);
  });

  it('says what is wrong: a wrong key, an unknown delivery, no server, bad arguments', async () => {
    const hookline = await startTestHookline();
    const wrongKey = captureIo({ HOOKLINE_URL: hookline.url, HOOKLINE_API_KEY: 'nope' });
    expect(await createInspectCommand(wrongKey).run(['dlv_01ABC'])).toBe(1);
    expect(wrongKey.err()).toMatch(/answered 401 unauthorized: .*: check --api-key \(or HOOKLINE_API_KEY\)/);
    const unknown = captureIo({ HOOKLINE_URL: hookline.url, HOOKLINE_API_KEY: API_KEY });
    expect(await createInspectCommand(unknown).run(['dlv_01ABC'])).toBe(1);
    expect(unknown.err()).toMatch(/answered 404 delivery_not_found: .*: check the id, and that the key belongs to its project/);
    const down = captureIo({ HOOKLINE_API_KEY: API_KEY, HOOKLINE_PORT: '9' });
    expect(await createInspectCommand(down).run(['dlv_01ABC'])).toBe(1);
    expect(down.err()).toContain('cannot reach Hookline at http://127.0.0.1:9');
    const bad = captureIo();
    expect(await createInspectCommand(bad).run(['evt_1', '--format', 'png'])).toBe(2);
    expect(bad.err()).toContain('hookline inspect: --api-key: is required: --api-key KEY (or HOOKLINE_API_KEY)');
    expect(bad.err()).toContain('hookline inspect: --format: must be text, mermaid or json');
    expect(bad.err()).toContain('hookline inspect: the DELIVERY_ID must look like dlv_… (copy it from the delivery log)');
    // A bad --url is shown a URL this environment points at, not the default one.
    const schemeless = captureIo({ HOOKLINE_API_KEY: API_KEY, HOOKLINE_HOST: '10.1.2.3', HOOKLINE_PORT: '9090' });
    expect(await createInspectCommand(schemeless).run(['dlv_01ABC', '--url', '10.1.2.3:9090'])).toBe(2);
    expect(schemeless.err()).toContain('hookline inspect: --url: must be an absolute http:// or https:// URL: --url http://10.1.2.3:9090\n');
    const named = captureIo({ HOOKLINE_API_KEY: API_KEY, HOOKLINE_URL: 'https://hookline.example.com' });
    expect(await createInspectCommand(named).run(['dlv_01ABC', '--url', 'hookline.example.com'])).toBe(2);
    expect(named.err()).toContain('--url: must be an absolute http:// or https:// URL: --url https://hookline.example.com\n');
    // Without --url, a bad HOOKLINE_URL is named as the setting to fix.
    const badEnv = captureIo({ HOOKLINE_API_KEY: API_KEY, HOOKLINE_URL: 'hookline.example.com' });
    expect(await createInspectCommand(badEnv).run(['dlv_01ABC'])).toBe(2);
    expect(badEnv.err()).toBe('hookline inspect: HOOKLINE_URL=hookline.example.com must be an absolute http:// or https:// URL: set it like http://127.0.0.1:8080, or pass --url\n');
    const help = captureIo();
    expect(await createInspectCommand(help).run(['--help'])).toBe(0);
    expect(help.out()).toContain('GET /v1/logs/webhook-deliveries/:id');
  });
});
