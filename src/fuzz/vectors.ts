/**
 * The fuzzer's single-request cases as language-neutral test vectors (`hookline fuzz
 * --export-vectors DIR`): the bytes and headers of each request, the clock and secret to verify
 * them with, and whether a conforming Standard Webhooks verifier must accept or refuse them, and
 * why. The cases that need a receiver's memory (id-squatting, repeats) or its body limit are left
 * out: no verification function alone can pass or fail them. Pure: the same options make the same
 * vectors. The zod schema is the contract (docs/fuzz-vectors.schema.json is generated from it).
 */
import fc from 'fast-check';
import { z } from 'zod';
import { decodeSecret } from '../signing/secret.js';
import { buildExchange } from './build.js';
import type { CaseKind } from './cases.js';
import { CASE_KINDS, CASE_SPECS, caseArbitrary } from './cases.js';
import { describeCase } from './report.js';
import { kindSeed } from './run.js';

/** Kinds whose verdict a verification function alone decides. */
export const VECTOR_KINDS = CASE_KINDS.filter((kind) => CASE_SPECS[kind].expect === 'accept' || CASE_SPECS[kind].expect === 'reject');

export const vectorFileSchema = z.strictObject({
  version: z.literal(1),
  generator: z.string().describe('What wrote the file, and with which seed.'),
  secret: z.string().describe('The whsec_ secret every vector is signed with (or signed against, for forgeries).'),
  now: z.number().int().describe('Unix seconds: the clock to verify at (set your verifier\'s clock to it).'),
  toleranceSeconds: z.number().int().describe('The timestamp tolerance the labels assume (Standard Webhooks: 300).'),
  vectors: z.array(
    z.strictObject({
      name: z.string(),
      kind: z.enum(VECTOR_KINDS as [CaseKind, ...CaseKind[]]),
      expect: z.enum(['accept', 'refuse']).describe('What a conforming verifier must do with this request.'),
      why: z.string(),
      headers: z.record(z.string(), z.string()).describe('The request headers, names in lower case.'),
      bodyBase64: z.string().describe('The body bytes, base64 (standard alphabet, padded).'),
      framing: z.enum(['content-length', 'chunked']),
      chunks: z.array(z.number().int().min(1)).describe('The byte lengths of the writes the body was sent in, in order (a receiver must verify the concatenation).'),
    }),
  ),
});

export type VectorFile = z.output<typeof vectorFileSchema>;

export interface VectorOptions {
  readonly secret: string;
  readonly seed: number;
  /** Vectors per kind. */
  readonly runs: number;
  /** Unix seconds. */
  readonly nowSeconds: number;
  /** Bodies up to this size. */
  readonly maxBodyBytes: number;
}

export const VECTOR_TOLERANCE_SECONDS = 300;

const chunksOf = (length: number, splits: readonly number[]) => [...splits, length].map((at, index, all) => at - (index === 0 ? 0 : all[index - 1]!)).filter((size) => size > 0);

export function buildVectors(options: VectorOptions): VectorFile {
  const key = decodeSecret(options.secret);
  if (!key) throw new TypeError('the secret must be "whsec_" followed by base64');
  const vectors = VECTOR_KINDS.flatMap((kind) =>
    fc.sample(caseArbitrary(kind), { seed: kindSeed(options.seed, kind), numRuns: options.runs }).map((fuzzCase, index) => {
      const name = `${kind}-${index + 1}`;
      const [request] = buildExchange(fuzzCase, { key, webhookId: `msg_${name}`, nowSeconds: options.nowSeconds, toleranceSeconds: VECTOR_TOLERANCE_SECONDS, maxBodyBytes: options.maxBodyBytes }).requests;
      return {
        name,
        kind,
        expect: CASE_SPECS[kind].expect === 'accept' ? ('accept' as const) : ('refuse' as const),
        why: `${CASE_SPECS[kind].what}: ${describeCase(fuzzCase)}`,
        headers: { ...request!.headers },
        bodyBase64: Buffer.from(request!.body).toString('base64'),
        framing: request!.transfer?.framing ?? ('content-length' as const),
        chunks: chunksOf(request!.body.length, request!.transfer?.splits ?? []),
      };
    }),
  );
  return { version: 1, generator: `hookline fuzz --export-vectors, seed ${options.seed}`, secret: options.secret, now: options.nowSeconds, toleranceSeconds: VECTOR_TOLERANCE_SECONDS, vectors };
}
