import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';

/**
 * CI's short seed of `npm run nemesis` (docs/nemesis.md): three nodes on a three-server NATS
 * cluster, 20 s of load under the faults of seed 1, then the checks. It must leave a whole report,
 * which stays in test-artifacts/nemesis/seed-1, and every check must hold: the report's violations
 * are then the message, each a finding about Hookline (the seed's reproduction command, printed by
 * the run, reproduces it). A run whose delivery had not settled in time may leave events not yet
 * received (`UNSETTLED`), a warning here; with HOOKLINE_NEMESIS_STRICT=1 those fail it too.
 */
const STRICT = process.env.HOOKLINE_NEMESIS_STRICT === '1';

/**
 * What a run whose delivery had not settled when the wait ended may report besides `not-settled`:
 * an event not yet received, or not yet taken from its stream, when the checks read the cluster.
 * On a loaded CI machine one seed-1 run in three ended so (an event redelivered after the stream's
 * 30 s ack wait, received 1.6 s after the wait); every other check must hold in every run.
 */
const UNSETTLED = new Set(['not-settled', 'acked-lost', 'acked-delivery-unknown']);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SEED = 1;

describe('npm run nemesis, the short seed', () => {
  it(`seed ${SEED} for 20 s: a whole report in the directory, and every check held${STRICT ? '' : ' (but those of an unsettled end)'}`, async () => {
    ensureBuilt();
    // Kept after the run (test-artifacts/ is ignored by git), so that a failure can be read.
    const report = join(ROOT, 'test-artifacts', 'nemesis', `seed-${SEED}`);
    rmSync(report, { recursive: true, force: true });
    const run = spawn(process.execPath, [join(ROOT, 'bench', 'nemesis', 'run.mjs'), '--seed', String(SEED), '--duration', '20s', '--settle', '20s', '--report', report], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    run.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    run.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(run, 'exit')) as [number | null];

    for (const file of ['report.md', 'report.json', 'timeline.svg', 'logs/node-1.log', 'logs/nemesis.log']) expect(existsSync(join(report, file)), `${file} in the report (output:\n${output})`).toBe(true);
    const json = JSON.parse(readFileSync(join(report, 'report.json'), 'utf8'));
    const violations: Array<{ check: string; message: string }> = json.result.violations;
    const unsettled = violations.some((violation) => violation.check === 'not-settled');
    // Exit 1 means violations, each in the report; anything else is the tool failing.
    expect(code === 0 || (code === 1 && violations.length > 0), output.slice(-4_000)).toBe(true);
    const counted = STRICT || !unsettled ? violations : violations.filter((violation) => !UNSETTLED.has(violation.check));
    if (counted.length < violations.length) console.warn(`nemesis seed ${SEED}: delivery had not settled; not counted here: ${violations.map((violation) => violation.check).join(', ')}`);
    expect(counted.map((violation) => `${violation.check}: ${violation.message}`), output.slice(-4_000)).toEqual([]);
    expect(json.options).toMatchObject({ seed: SEED, durationMs: 20_000 });
    expect(json.result.counts.acked).toBeGreaterThan(500);
    if (STRICT || !unsettled) expect(json.result.counts.deliveredEvents).toBeGreaterThanOrEqual(json.result.counts.acked);
    expect(json.faults.some((fault: { startedMs: number | null }) => fault.startedMs !== null)).toBe(true);
    expect(readFileSync(join(report, 'timeline.svg'), 'utf8')).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  }, 150_000);
});
