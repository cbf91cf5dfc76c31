/**
 * `hookline fuzz --replay-case FILE`: one failing case sent again as the run sent it (case-file.ts),
 * and judged as the run judged it. Also the run's side: writing each failure's case file and the
 * commands that send it again.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { buildExchange } from '../fuzz/build.js';
import type { FuzzExchange, FuzzRequest } from '../fuzz/build.js';
import { parseCaseFile, replayContext, saveCase } from '../fuzz/case-file.js';
import type { CaseFile } from '../fuzz/case-file.js';
import { CASE_SPECS } from '../fuzz/cases.js';
import { describeCase, exchangeText } from '../fuzz/report.js';
import type { Reproduction } from '../fuzz/report-json.js';
import { curlCommand, quote, saveFailure } from '../fuzz/reproduce.js';
import { judge, undecidedBy } from '../fuzz/run.js';
import type { CaseResult, DuplicateExpectation, FailureClass, FuzzOutcome, FuzzReport } from '../fuzz/run.js';
import { sendWire } from '../fuzz/wire.js';
import { decodeSecret } from '../signing/secret.js';
import { NO_POSITIONALS, deliveryTimeoutFlag, isHttpUrl, runParsed, secretFlag } from './args.js';
import type { CliIo } from './io.js';

export interface RunSettings {
  readonly target: string;
  readonly toleranceSeconds: number;
  readonly maxBodyBytes: number;
  readonly expectDuplicate: DuplicateExpectation;
  readonly customHeaders: Readonly<Record<string, string>>;
  readonly corpus: readonly Uint8Array[] | undefined;
  /** --save-failures: also the request files curl reads. @default a new directory under `tempRoot` */
  readonly saveDir: string | undefined;
  /** Where the default directory goes: TMPDIR of the command's environment, else the system's. */
  readonly tempRoot: string;
}

/** Whether curl sends `exchange` as the run did: one request, in one write. */
const curlSendsAsIs = (exchange: FuzzExchange) => exchange.requests.length === 1 && !exchange.concurrent && exchange.requests[0]!.transfer === undefined;

/** The commands of each failure, its case file written on first ask. */
export function reproducer(report: FuzzReport, settings: RunSettings): (result: CaseResult, failure: FailureClass, index: number) => Reproduction {
  const made = new Map<FailureClass, Reproduction>();
  let dir = settings.saveDir;
  return (result, failure, index) => {
    const known = made.get(failure);
    if (known) return known;
    dir ??= mkdtempSync(join(settings.tempRoot, 'hookline-fuzz-'));
    const name = `${result.kind}-${index + 1}`;
    const { corpus } = settings;
    const file = saveCase(dir, name, {
      kind: result.kind,
      target: settings.target,
      seed: report.seed,
      reason: failure.reason,
      answers: failure.answers,
      fuzzCase: failure.fuzzCase,
      settings: {
        toleranceSeconds: settings.toleranceSeconds,
        maxBodyBytes: settings.maxBodyBytes,
        expectDuplicate: settings.expectDuplicate,
        largestDeliveryBytes: report.largestDeliveryBytes,
        customHeaders: settings.customHeaders,
        corpusEvent: corpus && corpus.length > 0 ? corpus[failure.fuzzCase.delivery.corpusPick % corpus.length]! : null,
      },
    }, failure.exchange);
    const save = () => saveFailure(dir!, name, settings.target, failure.reason, failure.exchange.requests).curl;
    const saved = settings.saveDir !== undefined ? save() : null;
    // A body too large to inline is read from a file next to the case file.
    const curl = !curlSendsAsIs(failure.exchange) ? [] : (saved ?? [curlCommand(failure.exchange.requests[0]!, settings.target) ?? save()[0]!]);
    const reproduction = { replay: `hookline fuzz --replay-case ${quote(file)}`, curl };
    made.set(failure, reproduction);
    return reproduction;
  };
}

const wireOf = (request: FuzzRequest) => ({ headers: request.headers, body: request.body, ...(request.transfer ? { framing: request.transfer.framing, splits: request.transfer.splits } : {}) });

async function sendAsRun(target: URL, exchange: FuzzExchange, timeoutMs: number): Promise<FuzzOutcome[]> {
  const send = (request: FuzzRequest) => sendWire(target, wireOf(request), timeoutMs);
  if (exchange.concurrent) return Promise.all(exchange.requests.map(send));
  const outcomes: FuzzOutcome[] = [];
  for (const request of exchange.requests) outcomes.push(await send(request));
  return outcomes;
}

const answersOf = (outcomes: readonly FuzzOutcome[]) => outcomes.map((outcome) => (outcome.status === null ? 'no answer' : String(outcome.status))).join('→');

const REPLAY_FLAGS = {
  'replay-case': { type: 'string' },
  target: { type: 'string' },
  secret: { type: 'string' },
  timeout: { type: 'string' },
} as const;

/** `hookline fuzz --replay-case FILE [--target URL] [--secret whsec_…]`: exit 1 when the failure shows again, 0 when not. */
export function replayCase(io: CliIo, args: readonly string[]): Promise<number> {
  const schema = z.object({
    'replay-case': z.string().min(1, 'must name a case file'),
    target: z.string().refine(isHttpUrl, 'must be an absolute http:// or https:// URL').optional(),
    secret: secretFlag(io.env.WEBHOOK_SECRET, 'give the secret the receiver verifies with, as for the run'),
    timeout: deliveryTimeoutFlag(io.env),
    positionals: NO_POSITIONALS,
  });
  return runParsed(io, 'fuzz', args, REPLAY_FLAGS, schema, async (options) => {
    let file: CaseFile;
    try {
      file = parseCaseFile(readFileSync(options['replay-case'], 'utf8'));
    } catch (error) {
      io.stderr.write(`hookline fuzz: --replay-case: ${options['replay-case']}: ${(error as Error).message}\n`);
      return 2;
    }
    const target = options.target ?? file.target;
    const now = Date.now();
    const exchange = buildExchange(file.fuzzCase, replayContext(file, decodeSecret(options.secret)!, `msg_${file.fuzzCase.delivery.idStem}_r${now.toString(36)}`, Math.floor(now / 1000)));
    const outcomes = await sendAsRun(new URL(target), exchange, options.timeout);
    const expect = CASE_SPECS[file.kind].expect;
    const reason = judge(expect, outcomes, file.settings.expectDuplicate);
    const undecided = reason === null ? undecidedBy(expect, outcomes) : null;
    io.stdout.write(`replaying ${file.kind} (${describeCase(file.fuzzCase)}) to ${target}: ${exchangeText(exchange)}\n`);
    io.stdout.write(`  answers ${answersOf(outcomes)} (the run, seed ${file.seed}, got ${file.answers})\n`);
    if (reason !== null) io.stdout.write(`FAIL ${file.kind}: ${reason}\n`);
    else io.stdout.write(undecided !== null ? `could not be decided: ${undecided}\n` : `pass: the failure did not show this time\n`);
    return reason === null ? 0 : 1;
  });
}
