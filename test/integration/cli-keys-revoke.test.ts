import { spawnSync } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { ensureBuilt, startChildNode } from '../helpers/child-node.js';
import { captureIo } from '../helpers/cli.js';
import { ENTRY, ROOT } from '../helpers/failed-start.js';
import { testDataDir } from '../helpers/temp-dir.js';

/**
 * `hookline keys revoke` beside a running `hookline serve` (another process, on the same data
 * directory): the node refuses a revoked key at its next request, and keeps taking the others.
 */

async function createKey(dataDir: string, project: string): Promise<string> {
  const io = captureIo({ HOOKLINE_DATA_DIR: dataDir });
  expect(await runCli(['keys', 'create', '--project', project], io), io.err()).toBe(0);
  return /: (\S+)\n$/.exec(io.out())![1]!;
}

/** `hookline keys revoke` as the installed command, the key piped to its standard input. */
function revokeFromStdin(dataDir: string, key: string, ...flags: string[]) {
  return spawnSync(process.execPath, [ENTRY, 'keys', 'revoke', '--key-stdin', ...flags], {
    cwd: ROOT,
    input: `${key}\n`,
    env: { PATH: process.env.PATH ?? '', HOOKLINE_DATA_DIR: dataDir, HOOKLINE_API_KEY: 'default-key' },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('hookline keys revoke', () => {
  it('revokes a key beside a running node, which answers 401 to it at the next request while other keys work; unknown and last keys are refused', async () => {
    ensureBuilt();
    const dataDir = testDataDir();
    const [leaked, kept] = [await createKey(dataDir, 'billing'), await createKey(dataDir, 'billing')];
    const node = await startChildNode(dataDir, { HOOKLINE_API_KEY: 'default-key' });
    onTestFinished(() => void node.process.kill('SIGKILL'));
    const status = async (key: string) => (await fetch(`${node.url}/v1/logs/webhook-deliveries`, { headers: { authorization: `Bearer ${key}` } })).status;
    expect(await status(leaked)).toBe(200);

    const revoked = captureIo({ HOOKLINE_DATA_DIR: dataDir }, `${leaked}\n`);
    expect(await runCli(['keys', 'revoke', '--key-stdin'], revoked), revoked.err()).toBe(0);
    expect(revoked.out()).toBe('revoked a key of project "billing"; 1 key left\n');
    expect(await status(leaked)).toBe(401);
    expect(await status(kept)).toBe(200);
    expect(await status('default-key')).toBe(200);

    const again = captureIo({ HOOKLINE_DATA_DIR: dataDir });
    expect(await runCli(['keys', 'revoke', '--key', leaked], again)).toBe(1);
    expect(again.err()).toBe(`hookline keys revoke: no such key in ${dataDir}: it was revoked already or is another data directory's (check --data-dir or HOOKLINE_DATA_DIR)\n`);

    const both = captureIo({ HOOKLINE_DATA_DIR: dataDir });
    expect(await runCli(['keys', 'revoke', '--key', kept, '--key-stdin'], both)).toBe(2);
    expect(both.err()).toContain('give the key once: --key-stdin (reads it from standard input) or --key KEY');

    const last = revokeFromStdin(dataDir, 'default-key');
    expect(last.status, last.stderr).toBe(1);
    expect(last.stderr).toBe('hookline keys revoke: that is the last key of project "default": stop the service, run hookline keys create --project default and revoke this one after, or pass --force to leave the project without a key\n');
    expect(await status('default-key')).toBe(200);

    const forced = revokeFromStdin(dataDir, 'default-key', '--force');
    expect(forced.status, forced.stderr).toBe(0);
    expect(forced.stdout).toBe('revoked a key of project "default"; it has no key now (hookline keys create --project default, with the service stopped, makes one)\n');
    expect(forced.stderr).toBe('hookline keys revoke: HOOKLINE_API_KEY still holds this key: change or unset it, or the next start adds it again\n');
    expect(await status('default-key')).toBe(401);
    expect(await status(kept)).toBe(200);
    expect(node.errorLogs()).toEqual([]);

    node.process.kill('SIGTERM');
    expect(await node.exited).toMatchObject({ code: 0 });
  }, 60_000);

  it('--cluster without HOOKLINE_NATS_URL: exit 1, one line naming the flag, the setting and the fix', async () => {
    for (const args of [['keys', 'create', '--project', 'prj_any', '--cluster'], ['keys', 'revoke', '--cluster', '--key', 'hk_any']]) {
      const io = captureIo({});
      expect(await runCli(args, io), args.join(' ')).toBe(1);
      expect(io.err()).toBe(`hookline keys ${args[1]}: cluster mode (--cluster or HOOKLINE_CLUSTER=1) needs HOOKLINE_NATS_URL: the nodes of a cluster talk through NATS; set it to your NATS server, e.g. nats://127.0.0.1:4222\n`);
    }
  });
});
