import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * The README's quick start, pasted as written: the second shell block of "## Quick start" runs in
 * bash from the repository root, on a fresh data directory, and must end with a verified delivery.
 * Its ports (8080 and 9000) are the README's own, so the test needs them free.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README_PORTS = [8080, 9000];

/** The shell blocks of the README's "## Quick start" section, in order. */
export function quickStartBlocks(readme: string): string[] {
  const start = readme.indexOf('\n## Quick start');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

let stopScript: (() => Promise<void>) | null = null;

afterEach(async () => {
  await stopScript?.();
  stopScript = null;
});

describe('README quick start', () => {
  it('pasted into bash on a fresh data dir, shows a verified delivery and a succeeded log entry', async () => {
    for (const port of README_PORTS) {
      expect(await portIsFree(port), `port ${port} (used by the README's quick start) must be free for this test`).toBe(true);
    }
    ensureBuilt();
    const blocks = quickStartBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const script = blocks[1]!;
    const dataDir = makeTempDir('hookline-quickstart-');
    const environment = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('HOOKLINE_') && name !== 'WEBHOOK_SECRET'));
    // Its own process group, so the servers the block leaves running in the background stop with it.
    const child = spawn('bash', ['-e', '-c', script], { cwd: ROOT, env: { ...environment, HOOKLINE_DATA_DIR: dataDir.path }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    stopScript = async () => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // the group is already gone
      }
      await exited;
      // The servers in the group drain on SIGTERM; wait until both ports are released.
      for (const port of README_PORTS) {
        const deadline = Date.now() + 15_000;
        while (!(await portIsFree(port)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      dataDir.remove();
    };

    const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 90_000))]);
    expect(code, `the quick start block did not finish cleanly:\n${output}`).toBe(0);
    // The receiver's line for the delivery: status 204, the delivery id, the verdict.
    expect(output).toMatch(/\b204\s+dlv_\S+\s+service\.trigger\.event\s+verified\b/);
    // The last command prints the delivery log (curl adds no newline, so read from its start).
    const logPage = output.slice(output.lastIndexOf('{"data":['));
    expect(logPage).toMatch(/^\{"data":\[\{"id":"dlv_[^{}]*"status":"succeeded"/);
  }, 120_000);
});
