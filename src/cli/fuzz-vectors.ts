/** `hookline fuzz --export-vectors DIR`: the single-request cases as JSON test vectors (src/fuzz/vectors.ts). */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { buildVectors } from '../fuzz/vectors.js';
import { counted } from '../plural.js';
import { generateSecret } from '../signing/secret.js';
import { NO_POSITIONALS, byteSizeFlag, integerFlag, runParsed, secretFlag } from './args.js';
import type { CliIo } from './io.js';

export const VECTORS_FILE = 'hookline-fuzz-vectors.json';
const DEFAULT_VECTOR_RUNS = 10;

const FLAGS = {
  'export-vectors': { type: 'string' },
  secret: { type: 'string' },
  seed: { type: 'string' },
  runs: { type: 'string' },
  'max-body': { type: 'string' },
} as const;

export function exportVectors(io: CliIo, args: readonly string[]): Promise<number> {
  const given = args.includes('--secret') || args.some((arg) => arg.startsWith('--secret=')) || io.env.WEBHOOK_SECRET !== undefined;
  const schema = z.object({
    'export-vectors': z.string().min(1, 'must name a directory'),
    // A secret of its own when none is given: the vectors carry theirs.
    secret: given ? secretFlag(io.env.WEBHOOK_SECRET, 'give a whsec_ secret, or none for a new one') : z.string().optional().transform(() => generateSecret()),
    seed: integerFlag(-2147483648, 2147483647, Math.floor(Math.random() * 2 ** 31), 'a seed'),
    runs: integerFlag(1, 1000, DEFAULT_VECTOR_RUNS, 'the vectors per kind'),
    'max-body': byteSizeFlag(64 * 1024),
    positionals: NO_POSITIONALS,
  });
  return runParsed(io, 'fuzz', args, FLAGS, schema, async (options) => {
    const file = buildVectors({ secret: options.secret, seed: options.seed, runs: options.runs, nowSeconds: Math.floor(Date.now() / 1000), maxBodyBytes: options['max-body'] });
    mkdirSync(options['export-vectors'], { recursive: true });
    const path = join(options['export-vectors'], VECTORS_FILE);
    writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
    io.stdout.write(`wrote ${counted(file.vectors.length, 'test vector')} (seed ${options.seed}) to ${path}; docs/fuzz-vectors.md shows how to run them\n`);
    return 0;
  });
}
