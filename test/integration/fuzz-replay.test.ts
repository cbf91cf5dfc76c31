import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createFuzzCommand } from '../../src/cli/fuzz.js';
import type { FuzzJsonReport } from '../../src/fuzz/index.js';
import { generateSecret } from '../../src/sdk/index.js';
import { PLANTED, serve } from '../fixtures/planted-receivers.js';
import { captureIo } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Every reproduce command `hookline fuzz` prints, run as printed against the planted receiver it
 * came from, shows the same failure: the replay (`hookline fuzz --replay-case FILE`) sends the
 * case's requests as the run did (pieces, order, copies at once), and curl is offered only where
 * it sends the one request as the run did.
 */

const SECRET = generateSecret();
const run = promisify(execFile);

/** An environment whose TMPDIR (where failing cases are written) is removed after the test. */
function tempEnv(env: Record<string, string> = {}): Record<string, string> {
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  return { ...env, TMPDIR: dir.path };
}

/** The words of a shell command, as sh splits them. */
async function words(command: string): Promise<string[]> {
  const { stdout } = await run('sh', ['-c', `set -- ${command}; printf '%s\\0' "$@"`], { encoding: 'utf8' });
  return stdout.split('\0').slice(0, -1);
}

/** Runs a printed `hookline …` command in-process, the secret in WEBHOOK_SECRET as the label says. */
async function hookline(command: string): Promise<{ code: number; out: string }> {
  const [name, sub, ...args] = await words(command);
  expect([name, sub]).toEqual(['hookline', 'fuzz']);
  const io = captureIo({ WEBHOOK_SECRET: SECRET });
  const code = await createFuzzCommand(io).run(args);
  expect(io.err()).toBe('');
  return { code, out: io.out() };
}

async function fuzz(url: string, flags: readonly string[] = [], format = 'json'): Promise<string> {
  const io = captureIo(tempEnv({ WEBHOOK_SECRET: SECRET }));
  await createFuzzCommand(io).run(['--target', url, '--seed', '1414', '--runs', '30', '--max-body', '64kb', '--skip-measure', '--format', format, ...flags]);
  return io.out();
}

describe('hookline fuzz reproduces every failure as it was sent', () => {
  it.each(PLANTED)('$bug: each replay and curl command shows the failure again', async ({ receiver, flags }) => {
    const url = await serve(receiver(SECRET));
    const report = JSON.parse(await fuzz(url, flags)) as FuzzJsonReport;
    const failures = report.cases.flatMap((entry) => entry.failures.map((failure) => ({ kind: entry.kind, failure })));
    expect(failures.length).toBeGreaterThan(0);
    for (const { kind, failure } of failures) {
      // Copies sent at once race inside the receiver: a replay shows the failure when they meet as they met in the run, so up to 3 tries.
      let replayed = await hookline(failure.replay);
      for (let tries = 1; kind === 'concurrent-duplicates' && replayed.code !== 1 && tries < 3; tries++) replayed = await hookline(failure.replay);
      expect(replayed.code, `${failure.replay}\n${replayed.out}`).toBe(1);
      expect(replayed.out).toContain(`\nFAIL ${kind}: `);
      // Which of several copies sent at once is refused is the scheduler's choice; in turn, the answers are the run's.
      if (kind !== 'concurrent-duplicates') expect(replayed.out).toContain(`  answers ${failure.answers} (the run, seed 1414, got ${failure.answers})`);
      const saved = JSON.parse(readFileSync((await words(failure.replay))[3]!, 'utf8')) as { sent: { requests: unknown[]; concurrent: boolean } };
      expect(saved.sent.requests).toHaveLength(failure.requests.length);
      for (const command of failure.curl) {
        expect(failure.requests).toHaveLength(1);
        expect(failure.requests[0]!.splits).toEqual([]);
        const { stdout } = await run('sh', ['-c', command!], { encoding: 'utf8' });
        expect(stdout.trim()).toBe(String(failure.outcomes[0]!.status));
      }
    }
  });

  it('labels each command with what it sends; a body written in pieces gets no curl command, which would send it in one', async () => {
    const perChunk = PLANTED.find((entry) => entry.bug === 'per-chunk UTF-8 decoding')!;
    const out = await fuzz(await serve(perChunk.receiver(SECRET)), ['--only', 'valid-chunked'], 'text');
    expect(out).toMatch(/\n {2}reproduce \(1 request, (chunked|content-length), written in \d pieces cut at bytes [\d, ]+, as the run sent it, with a new webhook-id and timestamp; the secret from --secret or WEBHOOK_SECRET\): hookline fuzz --replay-case '[^']+valid-chunked-1\.case\.json'\n/);
    expect(out).not.toContain('curl');
  });
});
