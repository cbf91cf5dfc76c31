import { readFileSync, writeFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { z } from 'zod';
import { createFuzzCommand } from '../../src/cli/fuzz.js';
import { VECTOR_KINDS, vectorFileSchema } from '../../src/fuzz/vectors.js';
import type { VectorFile } from '../../src/fuzz/vectors.js';
import { captureIo } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * `hookline fuzz --export-vectors DIR` against the Standard Webhooks reference library
 * (`standardwebhooks`, as docs/fuzz-vectors.md runs it): every vector labelled accept verifies, every
 * one labelled refuse throws, at the vectors' clock. The file validates against
 * docs/fuzz-vectors.schema.json, which is generated from the zod schema.
 */

afterEach(() => void vi.useRealTimers());

async function exported(...flags: string[]): Promise<VectorFile> {
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  const io = captureIo();
  expect(await createFuzzCommand(io).run(['--export-vectors', dir.path, ...flags])).toBe(0);
  expect(io.out()).toMatch(/^wrote \d+ test vectors \(seed -?\d+\) to .*hookline-fuzz-vectors\.json/);
  return JSON.parse(readFileSync(`${dir.path}/hookline-fuzz-vectors.json`, 'utf8')) as VectorFile;
}

describe('hookline fuzz --export-vectors', () => {
  it('writes vectors the schema in docs/ describes', async () => {
    const schemaFile = new URL('../../docs/fuzz-vectors.schema.json', import.meta.url);
    const generated = `${JSON.stringify(z.toJSONSchema(vectorFileSchema), null, 2)}\n`;
    if (process.env.HOOKLINE_UPDATE_SCHEMA === '1') writeFileSync(schemaFile, generated);
    expect(readFileSync(schemaFile, 'utf8'), 'docs/fuzz-vectors.schema.json is stale: run this test with HOOKLINE_UPDATE_SCHEMA=1').toBe(generated);
    const file = await exported('--seed', '39', '--runs', '3');
    const validate = new Ajv2020({ strict: false }).compile(JSON.parse(generated) as object);
    expect(validate(file), JSON.stringify(validate.errors)).toBe(true);
    expect(new Set(file.vectors.map((vector) => vector.kind))).toEqual(new Set(VECTOR_KINDS));
    // The same seed and secret make the same vectors, but for the clock.
    const again = await exported('--seed', '39', '--runs', '3', '--secret', file.secret);
    expect(again.vectors.map((vector) => vector.bodyBase64)).toEqual(file.vectors.map((vector) => vector.bodyBase64));
  });

  it('verify with the Standard Webhooks reference library as labelled', async () => {
    const file = await exported('--seed', '2039', '--runs', '25');
    vi.useFakeTimers({ now: file.now * 1000, toFake: ['Date'] });
    const wh = new Webhook(file.secret.replace(/^whsec_/, ''));
    const wrong = file.vectors.flatMap((vector) => {
      const body = Buffer.from(vector.bodyBase64, 'base64');
      expect(vector.chunks.reduce((sum, size) => sum + size, 0)).toBe(body.length);
      let accepted = true;
      try {
        wh.verify(body, vector.headers);
      } catch {
        accepted = false;
      }
      return accepted === (vector.expect === 'accept') ? [] : [`${vector.name} (${vector.why}): labelled ${vector.expect}, the reference ${accepted ? 'accepted' : 'refused'} it`];
    });
    expect(wrong).toEqual([]);
    expect(file.vectors.filter((vector) => vector.expect === 'accept').length).toBeGreaterThan(50);
    expect(file.vectors.filter((vector) => vector.expect === 'refuse').length).toBeGreaterThan(150);
  });
});
