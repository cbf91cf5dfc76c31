import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generateSecret, signWebhook } from '../../src/sdk/index.js';

/**
 * examples/python-receiver.py, the Python receiver docs/receivers.md shows: its
 * `verify_webhook_signature` must accept what Hookline signs and refuse what `verifyWebhookSignature`
 * refuses. Skipped where no `python3` is on PATH.
 */

const EXAMPLE = fileURLToPath(new URL('../../examples/python-receiver.py', import.meta.url));
const hasPython = spawnSync('python3', ['--version']).status === 0;

interface Case {
  name: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  secret: string;
}

/** Each case's verdict from the Python function, by name. */
function pythonVerdicts(cases: Case[]): Record<string, boolean> {
  const script = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("receiver", ${JSON.stringify(EXAMPLE)})
receiver = importlib.util.module_from_spec(spec)
spec.loader.exec_module(receiver)
cases = json.load(sys.stdin)
print(json.dumps({c["name"]: receiver.verify_webhook_signature(c["id"], c["timestamp"], c["signature"], c["body"].encode("utf-8"), c["secret"]) for c in cases}))
`;
  const result = spawnSync('python3', ['-c', script], { input: JSON.stringify(cases), encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Record<string, boolean>;
}

describe.skipIf(!hasPython)('the Python receiver example', () => {
  it('accepts deliveries signed as Hookline signs them and refuses tampered, stale or wrongly keyed ones', async () => {
    const secret = generateSecret();
    const other = generateSecret();
    const id = 'dlv_01PYTHONEXAMPLE';
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ version: 'v1', id: 'evt_1', type: 'service.trigger.event', metadata: {}, data: { city: 'Zürich ☃' }, timestamp: '2026-11-28T00:00:00.000+00:00' });
    const sign = (secrets: string[], timestamp = now, signedBody = body) => signWebhook({ id, timestamp, body: signedBody, secrets });
    const cases: Case[] = [
      { name: 'valid', id, timestamp: String(now), signature: await sign([secret]), body, secret },
      { name: 'valid without whsec_ and padding', id, timestamp: String(now), signature: await sign([secret]), body, secret: secret.replace(/^whsec_/, '').replace(/=+$/, '') },
      { name: 'valid, secret read from a file with a newline', id, timestamp: String(now), signature: await sign([secret]), body, secret: `${secret}\n` },
      { name: 'rotation, ours second', id, timestamp: String(now), signature: await sign([other, secret]), body, secret },
      { name: 'tampered body', id, timestamp: String(now), signature: await sign([secret]), body: body.replace('Zürich', 'Zurich'), secret },
      { name: 'other id', id: 'dlv_other', timestamp: String(now), signature: await sign([secret]), body, secret },
      { name: 'wrong secret', id, timestamp: String(now), signature: await sign([other]), body, secret },
      // Well past the 300 s tolerance: Python may start seconds later on a loaded machine.
      { name: 'stale', id, timestamp: String(now - 900), signature: await sign([secret], now - 900), body, secret },
      { name: 'future', id, timestamp: String(now + 900), signature: await sign([secret], now + 900), body, secret },
      { name: 'v2 prefix', id, timestamp: String(now), signature: (await sign([secret])).replace(/^v1,/, 'v2,'), body, secret },
      { name: 'no signature', id, timestamp: String(now), signature: '', body, secret },
      { name: 'garbage timestamp', id, timestamp: 'soon', signature: await sign([secret]), body, secret },
    ];
    expect(pythonVerdicts(cases)).toEqual({
      valid: true,
      'valid without whsec_ and padding': true,
      'valid, secret read from a file with a newline': true,
      'rotation, ours second': true,
      'tampered body': false,
      'other id': false,
      'wrong secret': false,
      stale: false,
      future: false,
      'v2 prefix': false,
      'no signature': false,
      'garbage timestamp': false,
    });
  });
});
