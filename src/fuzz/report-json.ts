/**
 * The machine-readable report of a fuzz run (`--format json`, one document on stdout) and its JUnit
 * form (`--junit FILE`), for CI gates. The zod schema is the contract: docs/fuzz-report.schema.json
 * is generated from it (test/integration/cli-fuzz.test.ts fails while that file is stale, and
 * rewrites it with HOOKLINE_UPDATE_SCHEMA=1).
 */
import { z } from 'zod';
import { CASE_KINDS } from './cases.js';
import { describeCase } from './report.js';
import type { Measurements } from './measure.js';
import type { CaseResult, FailureClass, FuzzReport } from './run.js';

/** Bodies larger than this are left out of the JSON (their size and the saved file remain). */
const JSON_BODY_BYTES = 64 * 1024;

const stall = z.strictObject({ status: z.number().int().nullable(), result: z.enum(['answered', 'closed', 'waiting']), afterMs: z.number().int().min(0) });
const windowSide = z.strictObject({ acceptedSeconds: z.number().int().nullable(), unbounded: z.boolean() });

export const fuzzReportSchema = z.strictObject({
  version: z.literal(1),
  target: z.string(),
  seed: z.number().int(),
  ok: z.boolean().describe('True when nothing failed: the exit status is 0.'),
  stopped: z.string().nullable().describe('Why the run stopped early (the receiver stopped answering); null when it ran to the end.'),
  diagnosis: z.string().nullable().describe('One cause for the whole run (no correctly signed delivery was accepted: check the secret); the kinds then carry no diagnosis of their own.'),
  cases: z.array(
    z.strictObject({
      kind: z.enum(CASE_KINDS as [string, ...string[]]),
      what: z.string(),
      expect: z.string(),
      runs: z.number().int().min(0),
      requests: z.number().int().min(0),
      failedRuns: z.number().int().min(0),
      answers: z.record(z.string(), z.number().int().min(0)).describe('Answers by status, or by sequence (`204→409`) for exchanges of several requests.'),
      verdict: z.enum(['pass', 'fail', 'undecided']).describe('undecided: no run could tell a right answer from a wrong one (not a failure, and not a pass).'),
      diagnosis: z.string().nullable(),
      undecided: z.string().nullable().describe('Why the verdict is undecided, and what lets the check decide; null otherwise.'),
      failures: z.array(
        z.strictObject({
          answers: z.string().describe('The answers that make this failure class.'),
          reason: z.string(),
          runs: z.number().int().min(1),
          shrinks: z.number().int().min(0),
          description: z.string(),
          requests: z.array(
            z.strictObject({
              headers: z.record(z.string(), z.string()),
              bodyBytes: z.number().int().min(0),
              bodyBase64: z.string().nullable().describe('Null for bodies over 64 KiB.'),
              framing: z.enum(['content-length', 'chunked']),
              splits: z.array(z.number().int().min(0)),
            }),
          ),
          outcomes: z.array(z.strictObject({ status: z.number().int().nullable(), error: z.string().nullable() })),
          replay: z.string().describe('The command that sends this case again as the run sent it (hookline fuzz --replay-case FILE).'),
          curl: z.array(z.string().nullable()).describe('A curl command for the one request, when curl sends it as the run did (one request, one write); empty otherwise. Null when the body is too large to inline and was not saved.'),
        }),
      ),
    }),
  ),
  measurements: z
    .strictObject({
      timestampWindow: z.strictObject({ past: windowSide, future: windowSide, capSeconds: z.number().int() }),
      largestBody: z.strictObject({ acceptedBytes: z.number().int().nullable(), unbounded: z.boolean(), capBytes: z.number().int() }),
      slowBody: stall,
      longContentLength: stall,
      shortContentLength: z.strictObject({ status: z.number().int().nullable() }),
      failures: z.array(z.string()),
    })
    .nullable()
    .describe('Null with --no-measure, or when the run stopped.'),
});

export type FuzzJsonReport = z.output<typeof fuzzReportSchema>;

export interface JsonReportInput {
  readonly report: FuzzReport;
  readonly target: string;
  readonly measurements: Measurements | null;
  readonly measurementFailures: readonly string[];
  readonly reproduce: (result: CaseResult, failure: FailureClass, index: number) => Reproduction;
}

/** How a failure is sent again: the replay command, and a curl command when curl sends it as the run did. */
export interface Reproduction {
  readonly replay: string;
  readonly curl: readonly (string | null)[];
}

const reproduction = (found: Reproduction) => ({ replay: found.replay, curl: [...found.curl] });

export function toJsonReport(input: JsonReportInput): FuzzJsonReport {
  const { report } = input;
  return {
    version: 1,
    target: input.target,
    seed: report.seed,
    ok: report.failed === 0 && report.stopped === null && input.measurementFailures.length === 0,
    stopped: report.stopped,
    diagnosis: report.diagnosis,
    cases: report.results.map((result) => ({
      kind: result.kind,
      what: result.what,
      expect: result.expect,
      runs: result.runs,
      requests: result.requests,
      failedRuns: result.failedRuns,
      answers: { ...result.answers },
      verdict: result.verdict,
      diagnosis: result.diagnosis,
      undecided: result.undecided,
      failures: result.failures.map((failure, index) => ({
        answers: failure.answers,
        reason: failure.reason,
        runs: failure.runs,
        shrinks: failure.shrinks,
        description: describeCase(failure.fuzzCase),
        requests: failure.exchange.requests.map((request) => ({
          headers: { ...request.headers },
          bodyBytes: request.body.length,
          bodyBase64: request.body.length <= JSON_BODY_BYTES ? Buffer.from(request.body).toString('base64') : null,
          framing: request.transfer?.framing ?? 'content-length',
          splits: [...(request.transfer?.splits ?? [])],
        })),
        outcomes: failure.outcomes.map((outcome) => ({ status: outcome.status, error: outcome.error })),
        ...reproduction(input.reproduce(result, failure, index)),
      })),
    })),
    measurements: input.measurements ? { ...input.measurements, failures: [...input.measurementFailures] } : null,
  };
}

const xml = (text: string) => text.replace(/[<>&"']/g, (char) => `&#${char.charCodeAt(0)};`).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

/** The run as JUnit XML: one test case per kind of case, a failure element per failure class. */
export function toJunit(json: FuzzJsonReport): string {
  const failures = json.cases.filter((entry) => entry.verdict === 'fail').length + (json.measurements?.failures.length ? 1 : 0) + (json.stopped ? 1 : 0);
  const tests = json.cases.length + (json.measurements ? 1 : 0) + (json.stopped ? 1 : 0);
  const lines = [`<?xml version="1.0" encoding="UTF-8"?>`, `<testsuites name="hookline fuzz" tests="${tests}" failures="${failures}">`, `  <testsuite name="hookline fuzz ${xml(json.target)}" tests="${tests}" failures="${failures}">`, `    <properties><property name="seed" value="${json.seed}"/></properties>`];
  for (const entry of json.cases) {
    lines.push(`    <testcase classname="hookline.fuzz" name="${entry.kind}">`);
    if (entry.undecided !== null) lines.push(`      <skipped message="${xml(`could not be decided: ${entry.undecided}`)}"/>`);
    for (const failure of entry.failures) {
      const diagnosis = entry.diagnosis ?? json.diagnosis;
      const body = [diagnosis ? `diagnosis: ${diagnosis}` : '', failure.description, `replay: ${failure.replay}`, ...failure.curl.map((command) => `curl: ${command ?? '(body too large to inline: --save-failures DIR)'}`)].filter(Boolean).join('\n');
      lines.push(`      <failure message="${xml(`${failure.reason}; ${failure.runs} of ${entry.runs} runs`)}" type="${xml(failure.answers)}">${xml(body)}</failure>`);
    }
    lines.push(`    </testcase>`);
  }
  if (json.measurements) {
    lines.push(`    <testcase classname="hookline.fuzz" name="measurements">`);
    for (const failure of json.measurements.failures) lines.push(`      <failure message="${xml(failure)}"/>`);
    lines.push(`      <system-out>${xml(JSON.stringify({ ...json.measurements, failures: undefined }))}</system-out>`, `    </testcase>`);
  }
  if (json.stopped) lines.push(`    <testcase classname="hookline.fuzz" name="receiver answering"><failure message="${xml(json.stopped)}"/></testcase>`);
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}
