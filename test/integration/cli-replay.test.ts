import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createReplayCommand, parseTimeFlag } from '../../src/cli/replay.js';
import { createPacer } from '../../src/replay/replay-run.js';
import { generateSecret, verifyWebhookSignature } from '../../src/sdk/index.js';
import { captureIo } from '../helpers/cli.js';
import { allDeliveries, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';

/** `hookline replay` re-sends stored events, read from a running node's LMDB, to another target. */

async function hooklineWithEvents(): Promise<{ hookline: TestHookline; primary: Receiver; ids: string[] }> {
  const hookline = await startTestHookline();
  const primary = await startReceiver();
  await configureReceiver(hookline, primary);
  const ids: string[] = [];
  for (const [type, n] of [['service.trigger.event', 1], ['service.connected_account.expired', 2], ['service.trigger.event', 3]] as const) {
    const sent = await hookline.client.sendEvent({ type, data: { n, text: 'héllo / wörld' } });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    ids.push(sent.id);
  }
  return { hookline, primary, ids };
}

async function replay(hookline: TestHookline, ...args: string[]) {
  const io = captureIo({ HOOKLINE_DATA_DIR: hookline.dataDir });
  const code = await createReplayCommand(io).run(args);
  return { code, out: io.out(), err: io.err() };
}

describe('hookline replay', () => {
  it('re-sends the stored envelopes byte for byte, oldest first, signed with the given secret, at most --rate a second', async () => {
    const { hookline, primary, ids } = await hooklineWithEvents();
    const staging = await startReceiver();
    staging.secret = generateSecret();

    const { code, out } = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', staging.secret, '--rate', '20');
    expect(code, out).toBe(0);
    expect(out).toContain(`replaying 3 events of project "default" accepted from `);
    expect(out).toMatch(/replayed 3 of 3 events in \d+\.\d s: 3 answered 2xx, 0 failed; answers: 204×3/);

    expect(staging.received.map((delivery) => delivery.envelope.id)).toEqual(ids);
    for (const delivery of staging.received) {
      expect(delivery.verified).toBe(true);
      expect(delivery.webhookId).toMatch(/^rpl_/);
      const original = primary.received.find((one) => one.envelope.id === delivery.envelope.id)!;
      expect(delivery.body.equals(original.body)).toBe(true);
      expect(delivery.webhookId).not.toBe(original.webhookId);
    }
    // The spacing of sends is the pacer's, checked with an injected clock below ("paces sends …"):
    // arrival times here would be a timing assertion, and flaky on a loaded machine (89 ms seen).
    // The log is untouched: no delivery was made by the replay.
    expect(await allDeliveries(hookline.client)).toHaveLength(3);
  });

  it('selects by --type and --to, and lists with --dry-run', async () => {
    const { hookline, ids } = await hooklineWithEvents();
    const staging = await startReceiver();
    staging.secret = generateSecret();
    const typed = await replay(hookline, '--from', '2020-01-01T00:00:00Z', '--type', 'service.connected_account.expired', '--target', staging.url, '--secret', staging.secret);
    expect(typed.code).toBe(0);
    expect(staging.received.map((delivery) => delivery.envelope.id)).toEqual([ids[1]]);

    const none = await replay(hookline, '--from', '2020-01-01', '--to', '2021-01-01', '--target', staging.url, '--secret', staging.secret);
    expect(none.code).toBe(0);
    expect(none.out).toContain('no stored events of project "default" accepted from 2020-01-01T00:00:00.000+00:00 to 2021-01-01T00:00:00.000+00:00');

    const dry = await replay(hookline, '--from', '1d', '--target', staging.url, '--secret', staging.secret, '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.out).toContain('would replay 3 events');
    for (const id of ids) expect(dry.out).toMatch(new RegExp(`  ${id}  service\\.\\S+  \\S+\\+00:00  \\d+ bytes`));
    expect(staging.received).toHaveLength(1);
  });

  it('says a project that does not exist does not exist, exit 1, and counts in the singular when it is one', async () => {
    const hookline = await startTestHookline();
    await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    const staging = await startReceiver();
    staging.secret = generateSecret();
    const nosuch = await replay(hookline, '--project', 'nosuch', '--from', '1h', '--target', staging.url, '--secret', staging.secret);
    expect(nosuch.code).toBe(1);
    expect(nosuch.out).toBe('');
    expect(nosuch.err).toBe(`hookline replay: project "nosuch" does not exist in ${hookline.dataDir}; check --project (it holds "default", as hookline keys list shows)\n`);

    const one = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', staging.secret);
    expect(one.code, one.err).toBe(0);
    expect(one.out).toContain('replaying 1 event of project "default"');
    expect(one.out).toMatch(/replayed 1 of 1 event in \d+\.\d s: 1 answered 2xx, 0 failed; answers: 204×1/);
    const dry = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', staging.secret, '--dry-run');
    expect(dry.out).toContain('would replay 1 event of project "default"');
  });

  it('drives a receiver under load: concurrent, looped for --duration, shuffled, with duplicates that repeat a send exactly; latency figures', async () => {
    const { hookline, ids } = await hooklineWithEvents();
    const staging = await startReceiver();
    staging.secret = generateSecret();
    const { code, out } = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', staging.secret, '--rate', '500', '--concurrency', '4', '--duration', '2s', '--duplicates', '0.5', '--shuffle', '--seed', '7');
    expect(code, out).toBe(0);
    expect(out).toContain('at most 500 a second, 4 at once, looping for 2 s, shuffled, 50% duplicated (seed 7)');
    const summary = /replayed (\d+) sends of 3 events \((\d+) passes, (\d+) duplicates?\) in [\d.]+ s: (\d+) answered 2xx, 0 failed; answers: 204×(\d+); latency p50 \d+ ms, p99 \d+ ms, max \d+ ms/.exec(out);
    expect(summary, out).not.toBeNull();
    const [sent, passes, duplicates] = [Number(summary![1]), Number(summary![2]), Number(summary![3])];
    expect(passes).toBeGreaterThanOrEqual(2);
    expect(duplicates).toBeGreaterThan(0);
    expect(staging.received).toHaveLength(sent);
    expect(staging.received.every((delivery) => delivery.verified && ids.includes(delivery.envelope.id))).toBe(true);
    // Each duplicate repeats an earlier send's webhook-id and bytes; every other id is new.
    const byId = new Map<string, typeof staging.received>();
    for (const delivery of staging.received) byId.set(delivery.webhookId, [...(byId.get(delivery.webhookId) ?? []), delivery]);
    const repeated = [...byId.values()].filter((copies) => copies.length > 1);
    expect(repeated).toHaveLength(duplicates);
    for (const [first, second] of repeated) expect(second!.body.equals(first!.body)).toBe(true);
    expect(byId.size).toBe(sent - duplicates);
    // Shuffled: some pass is not in the stored order.
    const order = staging.received.filter((delivery) => byId.get(delivery.webhookId)![0] === delivery).map((delivery) => ids.indexOf(delivery.envelope.id));
    const passOrders = Array.from({ length: Math.floor(order.length / 3) }, (_, pass) => order.slice(pass * 3, pass * 3 + 3).join(''));
    expect(passOrders.some((pass) => pass !== '012')).toBe(true);
  });

  it("sends a real delivery's headers: Hookline's user-agent, the --header ones, and a signature by each --secret, newest first", async () => {
    const { hookline, primary } = await hooklineWithEvents();
    const staging = await startReceiver();
    const [newest, older] = [generateSecret(), generateSecret()];
    staging.secret = newest;
    const { code, out } = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', newest, '--secret', older, '--header', 'X-Receiver-Token: s3cret', '--rate', '1000');
    expect(code, out).toBe(0);
    expect(staging.received).toHaveLength(3);
    for (const delivery of staging.received) {
      expect(delivery.headers['user-agent']).toBe(primary.received[0]!.headers['user-agent']);
      expect(delivery.headers['x-receiver-token']).toBe('s3cret');
      // A receiver that checks only the first candidate must meet the newest secret there, as in a rotation.
      const candidates = delivery.signature.split(' ');
      expect(candidates).toHaveLength(2);
      const verifies = (signature: string, secret: string) => verifyWebhookSignature({ id: delivery.webhookId, timestamp: delivery.webhookTimestamp, signature, body: delivery.body, secret });
      expect(await verifies(candidates[0]!, newest)).toBe(true);
      expect(await verifies(candidates[1]!, older)).toBe(true);
    }
    const unparsed = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', newest, '--header', 'no colon');
    expect(unparsed.code).toBe(2);
    expect(unparsed.err).toContain('--header: must be "Name: value" (got "no colon")');
    const signed = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', newest, '--header', 'Webhook-Id: x');
    expect(signed.code).toBe(2);
    expect(signed.err).toContain('--header: Webhook-Id: Hookline sets Webhook-Id itself');
    expect(staging.received).toHaveLength(3);
  });

  it("sends the --target URL's credentials as basic auth, as deliveries do, and shows its password masked", async () => {
    const { hookline } = await hooklineWithEvents();
    const expected = `Basic ${Buffer.from('bob:p@ss').toString('base64')}`;
    const staging = await startReceiver({ respond: (delivery) => ({ status: delivery.headers.authorization === expected ? 204 : 401 }) });
    staging.secret = generateSecret();
    const target = staging.url.replace('http://', 'http://bob:p%40ss@');
    const { code, out } = await replay(hookline, '--from', '1h', '--target', target, '--secret', staging.secret, '--rate', '1000');
    expect(code, out).toBe(0);
    expect(out).toContain(`to ${staging.url.replace('http://', 'http://bob:***@')}, at most`);
    expect(out).not.toContain('p%40ss');
    expect(staging.received.map((delivery) => delivery.url)).toEqual(['/hooks', '/hooks', '/hooks']);
  });

  it('waits for each answer as long as real deliveries do: HOOKLINE_DELIVERY_TIMEOUT unless --timeout says otherwise', async () => {
    const { hookline } = await hooklineWithEvents();
    const staging = await startReceiver({ respond: () => new Promise((answer) => setTimeout(() => answer({ status: 204 }), 400)) });
    const run = async (env: Record<string, string>, ...args: string[]) => {
      const io = captureIo({ HOOKLINE_DATA_DIR: hookline.dataDir, ...env });
      return { code: await createReplayCommand(io).run(['--from', '1h', '--target', staging.url, '--secret', generateSecret(), '--rate', '1000', '--concurrency', '3', ...args]), out: io.out(), err: io.err() };
    };
    const short = await run({ HOOKLINE_DELIVERY_TIMEOUT: '200ms' });
    expect(short.code, short.out).toBe(1);
    expect(short.out).toContain('0 answered 2xx, 3 failed');
    const overridden = await run({ HOOKLINE_DELIVERY_TIMEOUT: '200ms' }, '--timeout', '2s');
    expect(overridden.code, overridden.out).toBe(0);
    const bad = await run({ HOOKLINE_DELIVERY_TIMEOUT: 'soon' });
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('HOOKLINE_DELIVERY_TIMEOUT');
  });

  it('has --concurrency sends in flight at once', async () => {
    const { hookline } = await hooklineWithEvents();
    // Each answer is held until 8 requests are open (then all are answered), or for 1 s.
    let open = 0;
    let mostOpen = 0;
    const held: Array<() => void> = [];
    const staging = await startReceiver({
      respond: () =>
        new Promise((answer) => {
          open++;
          mostOpen = Math.max(mostOpen, open);
          const release = () => {
            open--;
            answer({ status: 204 });
          };
          held.push(release);
          if (open >= 8) for (const next of held.splice(0)) next();
          else setTimeout(() => held.includes(release) && held.splice(held.indexOf(release), 1)[0]!(), 1_000);
        }),
    });
    staging.secret = generateSecret();
    const { code, out } = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', staging.secret, '--rate', '1000', '--concurrency', '8', '--duration', '1s');
    expect(code, out).toBe(0);
    expect(staging.received.length).toBeGreaterThanOrEqual(8);
    expect(staging.received.every((delivery) => delivery.verified)).toBe(true);
    expect(mostOpen).toBe(8);
  });

  it('summarises failed sends and exits 1', async () => {
    const { hookline, ids } = await hooklineWithEvents();
    const staging = await startReceiver({ respond: (_delivery, index) => ({ status: index === 1 ? 500 : 204 }) });
    const { code, out } = await replay(hookline, '--from', '1h', '--target', staging.url, '--secret', generateSecret(), '--rate', '1000');
    expect(code).toBe(1);
    expect(out).toMatch(/replayed 3 of 3 events in .*: 2 answered 2xx, 1 failed; answers: 204×2 500×1/);
    expect(out).toContain(`  FAILED ${ids[1]} (service.connected_account.expired, accepted `);
    expect(out).toContain('): HTTP 500');
  });

  it('refuses bad options and a directory without Hookline data, saying what to do', async () => {
    const io = captureIo();
    expect(await createReplayCommand(io).run(['--from', 'yesterday', '--to', 'soon', '--type', 'x', '--rate', '0'])).toBe(2);
    expect(io.err()).toContain('hookline replay: --from: must be an ISO 8601 time (2026-05-01T10:00:00Z) or a duration ago (30m, 2h, 7d) (got "yesterday")');
    expect(io.err()).toContain('hookline replay: --type: must be one of service.trigger.event, service.connected_account.expired, service.trigger.disabled');
    expect(io.err()).toContain('hookline replay: --target: is required');
    expect(io.err()).toContain('hookline replay: --rate: must be sends a second, a number above 0');
    const load = captureIo();
    expect(await createReplayCommand(load).run(['--from', '1h', '--target', 'http://127.0.0.1:9/', '--secret', generateSecret(), '--concurrency', '0', '--duplicates', '1.5'])).toBe(2);
    expect(load.err()).toContain('hookline replay: --concurrency: must be sends in flight, an integer from 1 to 256 (got "0")');
    expect(load.err()).toContain('hookline replay: --duplicates: must be a chance from 0 to 1 (got "1.5")');
    const missing = captureIo({ HOOKLINE_DATA_DIR: '/nonexistent/hookline-data' });
    expect(await createReplayCommand(missing).run(['--from', '1h', '--target', 'http://127.0.0.1:9/', '--secret', generateSecret()])).toBe(1);
    expect(missing.err()).toContain('no Hookline data in /nonexistent/hookline-data: point --data-dir (or HOOKLINE_DATA_DIR)');
    const help = captureIo();
    expect(await createReplayCommand(help).run(['-h'])).toBe(0);
    expect(help.out()).toContain('reads the events from the node\'s LMDB directory, read-only');
  });

  it('paces sends at most --rate a second, whatever the clock does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1000 }), fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 30 }), async (rate, workTimes) => {
        let clock = 1_000;
        const starts: number[] = [];
        const wait = createPacer(rate, () => clock, async (ms) => void (clock += ms));
        for (const work of workTimes) {
          await wait();
          starts.push(clock);
          clock += work;
        }
        for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(1000 / rate - 1e-9);
      }),
      { seed: 1122, numRuns: 200 },
    );
    expect(parseTimeFlag('2h', 10 * 3_600_000)).toBe(8 * 3_600_000);
    expect(parseTimeFlag('2026-05-01T10:00:00+02:00', 0)).toBe(Date.parse('2026-05-01T08:00:00Z'));
    expect(parseTimeFlag('May 1', 0)).toBeNull();
  });
});
