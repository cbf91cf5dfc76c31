/**
 * A failing case as a file, for `hookline fuzz --replay-case FILE`: the case itself (plain data,
 * cases.ts) and the settings it was built with, so that the replay builds the same requests (the
 * same body bytes, cut at the same bytes, sent in the same order or at once) and sends them as the
 * run did. Only the webhook-id and timestamp are new, with the signatures over them: the old ones
 * would be stale, or repeats to a receiver that remembers ids. The requests as sent are kept too,
 * for reading.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { BuildContext, FuzzExchange } from './build.js';
import type { CaseKind, FuzzCase } from './cases.js';
import { CASE_KINDS } from './cases.js';
import type { DuplicateExpectation } from './run.js';

export interface CaseFile {
  readonly hooklineFuzzCase: 1;
  readonly kind: CaseKind;
  readonly target: string;
  readonly seed: number;
  /** What was wrong, and the answers the run got (`400→204`). */
  readonly reason: string;
  readonly answers: string;
  readonly fuzzCase: FuzzCase;
  readonly settings: {
    readonly toleranceSeconds: number;
    readonly maxBodyBytes: number;
    /** How the run judged repeats (`--expect-duplicate`). */
    readonly expectDuplicate: DuplicateExpectation;
    readonly largestDeliveryBytes: number | null;
    readonly customHeaders: Readonly<Record<string, string>>;
    /** The corpus event the body was built from, when there was a corpus: the replay needs no corpus. */
    readonly corpusEvent: Uint8Array | null;
  };
  readonly sent: { readonly concurrent: boolean; readonly requests: readonly { readonly headers: Readonly<Record<string, string>>; readonly bodyBase64: string; readonly framing: string; readonly splits: readonly number[] }[] };
}

// Byte arrays (keys, a corpus event) as {"base64": …}: JSON has no bytes.
const BYTES = 'base64';
const toJson = (_key: string, value: unknown) => (value instanceof Uint8Array ? { [BYTES]: Buffer.from(value).toString('base64') } : value);
const fromJson = (_key: string, value: unknown) =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 1 && typeof (value as Record<string, unknown>)[BYTES] === 'string'
    ? new Uint8Array(Buffer.from((value as Record<string, string>)[BYTES]!, 'base64'))
    : value;

export function caseFileText(file: Omit<CaseFile, 'hooklineFuzzCase' | 'sent'>, exchange: FuzzExchange): string {
  const sent = {
    concurrent: exchange.concurrent,
    requests: exchange.requests.map((request) => ({ headers: request.headers, bodyBase64: Buffer.from(request.body).toString('base64'), framing: request.transfer?.framing ?? 'content-length', splits: request.transfer?.splits ?? [] })),
  };
  return `${JSON.stringify({ hooklineFuzzCase: 1, ...file, sent }, toJson, 2)}\n`;
}

const shape = z.object({
  hooklineFuzzCase: z.literal(1, { error: 'is not a hookline fuzz case file (no "hooklineFuzzCase": 1)' }),
  kind: z.enum(CASE_KINDS as [CaseKind, ...CaseKind[]]),
  target: z.string(),
  seed: z.number().int(),
  reason: z.string(),
  answers: z.string(),
  fuzzCase: z.looseObject({ kind: z.string(), delivery: z.looseObject({}) }),
  settings: z.object({
    toleranceSeconds: z.number().int().min(0),
    maxBodyBytes: z.number().int().min(0),
    expectDuplicate: z.enum(['2xx', 'any']),
    largestDeliveryBytes: z.number().int().min(0).nullable(),
    customHeaders: z.record(z.string(), z.string()),
    corpusEvent: z.instanceof(Uint8Array).nullable(),
  }),
  sent: z.looseObject({}),
});

/** The case file in `text`. @throws {Error} saying what is wrong with it. */
export function parseCaseFile(text: string): CaseFile {
  let value: unknown;
  try {
    value = JSON.parse(text, fromJson);
  } catch (error) {
    throw new Error(`not JSON: ${(error as Error).message}`);
  }
  const parsed = shape.safeParse(value);
  if (!parsed.success) throw new Error(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'file'}: ${issue.message}`).join('; '));
  if (parsed.data.fuzzCase.kind !== parsed.data.kind) throw new Error(`fuzzCase.kind "${parsed.data.fuzzCase.kind}" is not the file's kind "${parsed.data.kind}"`);
  return parsed.data as unknown as CaseFile;
}

/** The build context of a replay: the case's settings, a new id and the clock now. */
export function replayContext(file: CaseFile, key: Uint8Array, webhookId: string, nowSeconds: number): BuildContext {
  const { settings } = file;
  return {
    key,
    webhookId,
    nowSeconds,
    toleranceSeconds: settings.toleranceSeconds,
    maxBodyBytes: settings.maxBodyBytes,
    ...(settings.largestDeliveryBytes !== null ? { largestDeliveryBytes: settings.largestDeliveryBytes } : {}),
    // One event: the case's corpusPick modulo 1 picks it.
    ...(settings.corpusEvent !== null ? { corpus: [settings.corpusEvent] } : {}),
    customHeaders: settings.customHeaders,
  };
}

/** Writes the case file `<name>.case.json` under `dir`; returns its path. */
export function saveCase(dir: string, name: string, file: Omit<CaseFile, 'hooklineFuzzCase' | 'sent'>, exchange: FuzzExchange): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.case.json`);
  writeFileSync(path, caseFileText(file, exchange));
  return path;
}
