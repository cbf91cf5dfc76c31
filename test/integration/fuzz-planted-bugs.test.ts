import { describe, expect, it, onTestFinished } from 'vitest';
import { createFuzzCommand } from '../../src/cli/fuzz.js';
import type { FuzzJsonReport } from '../../src/fuzz/index.js';
import { generateSecret } from '../../src/sdk/index.js';
import { CORRECT, PLANTED, serve } from '../fixtures/planted-receivers.js';
import { captureIo } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * `hookline fuzz` against receivers with one planted bug each: it exits 1 and names exactly the
 * kinds of case the bug breaks (with the diagnosis where one is known). Correct receivers, and the
 * standardwebhooks and svix libraries used as documented, get no false failure: only their real
 * gap (no size limit) is reported.
 */

const SECRET = generateSecret();

/** An environment whose TMPDIR (where failing cases are written) is removed after the test. */
function tempEnv(env: Record<string, string> = {}): Record<string, string> {
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  return { ...env, TMPDIR: dir.path };
}

async function fuzz(url: string, flags: readonly string[] = [], secret = SECRET): Promise<{ code: number; report: FuzzJsonReport }> {
  const io = captureIo(tempEnv());
  const code = await createFuzzCommand(io).run(['--target', url, '--secret', secret, '--seed', '1414', '--runs', '30', '--max-body', '64kb', '--stall-wait', '200ms', '--format', 'json', ...flags]);
  expect(io.err()).toBe('');
  return { code, report: JSON.parse(io.out()) as FuzzJsonReport };
}

const failing = (report: FuzzJsonReport) => report.cases.filter((entry) => entry.verdict === 'fail').map((entry) => entry.kind).sort();

describe('hookline fuzz finds each planted bug', () => {
  it.each(PLANTED)('$bug: exit 1, naming the right case', async ({ receiver, fails, diagnosis, flags }) => {
    const { code, report } = await fuzz(await serve(receiver(SECRET)), flags);
    expect(failing(report), JSON.stringify(report.cases.filter((entry) => entry.verdict === 'fail').map((entry) => [entry.kind, entry.failures.map((failure) => failure.reason)]))).toEqual([...fails].sort());
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    if (diagnosis) expect(report.cases.map((entry) => entry.diagnosis).join('\n')).toMatch(diagnosis);
  });
});

describe('hookline fuzz raises no false alarm', () => {
  it.each(CORRECT)('$name', async ({ receiver, gaps, squatting, flags }) => {
    const { code, report } = await fuzz(await serve(receiver(SECRET)), flags);
    // Never a pass that was not seen: where a repeat and a new delivery get one answer, squatting does not show.
    expect(report.cases.find((entry) => entry.kind === 'id-squatting')!.verdict).toBe(squatting);
    expect(failing(report), JSON.stringify(report.cases.filter((entry) => entry.verdict === 'fail').map((entry) => [entry.kind, entry.failures.map((failure) => failure.reason)]))).toEqual([...gaps].sort());
    expect(code).toBe(gaps.length === 0 ? 0 : 1);
    // 300 s either way, give or take the second that may tick between signing and checking.
    for (const side of [report.measurements!.timestampWindow.past, report.measurements!.timestampWindow.future]) {
      expect(side.unbounded).toBe(false);
      expect(Math.abs(side.acceptedSeconds! - 300)).toBeLessThanOrEqual(1);
    }
  });
});

describe('hookline fuzz names one cause when no correctly signed delivery is accepted', () => {
  it('a correct receiver fuzzed with another secret: "check the secret", and no kind blamed for a mistake of its own', async () => {
    const { code, report } = await fuzz(await serve(CORRECT[0]!.receiver(SECRET)), ['--runs', '10', '--skip-measure'], generateSecret());
    expect(code).toBe(1);
    expect(report.diagnosis).toMatch(/^no correctly signed delivery was accepted: check the secret; the receiver answered 400 to all \d+$/);
    // At least the one correctly signed request of each run of valid, valid-utf8, valid-chunked and valid-rotation.
    expect(Number(/all (\d+)$/.exec(report.diagnosis!)![1])).toBeGreaterThanOrEqual(40);
    expect(report.cases.filter((entry) => entry.diagnosis !== null)).toEqual([]);
  });
});

describe('hookline fuzz gives a diagnosis that fits its shrunk case', () => {
  it('latin1 bodies: valid-chunked, shrunk to a small body with non-ASCII text, is blamed on the text, not on large bodies', async () => {
    const latin1 = PLANTED.find((entry) => entry.bug === 'latin1 body')!;
    const { report } = await fuzz(await serve(latin1.receiver(SECRET)), ['--only', 'valid-chunked', '--skip-measure']);
    const chunked = report.cases.find((entry) => entry.kind === 'valid-chunked')!;
    expect(chunked.verdict).toBe('fail');
    const smallest = Math.min(...chunked.failures.map((failure) => failure.requests[0]!.bodyBytes));
    expect(smallest).toBeLessThan(1024);
    expect(chunked.diagnosis).toMatch(/non-ASCII text .* you read the body as latin1/);
    expect(chunked.diagnosis).not.toMatch(/large bodies/);
  });
});
