import type { FuzzRequest } from './build.js';
import { TIMESTAMP_MARGIN_SECONDS, sentStyleOf, tamperedTypeOf } from './build.js';
import type { FuzzCase } from './cases.js';
import type { CaseResult, FuzzReport } from './run.js';

/** What makes a case what it is, in a few words, shown with its smallest failing delivery. */
export function describeCase(fuzzCase: FuzzCase): string {
  const style = `JSON spelled ${fuzzCase.delivery.style}`;
  switch (fuzzCase.kind) {
    case 'valid':
    case 'replayed-webhook-id':
      return `${style}, webhook-timestamp ${fuzzCase.delivery.offsetSeconds >= 0 ? '+' : ''}${fuzzCase.delivery.offsetSeconds} s from now`;
    case 'valid-second-candidate':
      return `${style}; first candidate signed with another secret, second with the right one`;
    case 'wrong-secret':
      return `${style}; signed with another secret`;
    case 'tampered-body': {
      const { tamper } = fuzzCase;
      const change =
        tamper.how === 'byte' ? `byte ${tamper.position} of the body XOR ${tamper.flip}`
        : tamper.how === 'data' ? `data key t_${tamper.key} added`
        : tamper.how === 'event-type' ? `the type changed to ${tamperedTypeOf(fuzzCase.delivery.eventType, tamper.type)}`
        : 'the event id changed';
      return `${style}; after signing, ${change}`;
    }
    case 'stale-timestamp':
    case 'future-timestamp':
      return `signed; webhook-timestamp ${fuzzCase.beyondSeconds + TIMESTAMP_MARGIN_SECONDS} s beyond the tolerance, in the ${fuzzCase.kind === 'stale-timestamp' ? 'past' : 'future'}`;
    case 'reserialised-json':
      return `signed as ${fuzzCase.delivery.style} JSON, sent as ${sentStyleOf(fuzzCase.delivery.style, fuzzCase.sentStyle)} JSON`;
    case 'missing-header':
      return `no ${fuzzCase.header} header`;
    case 'garbage-header':
      return `${fuzzCase.header} replaced by garbage; the signature is over the real value`;
    case 'unknown-version':
      return `the right signature under "${fuzzCase.version},"`;
    case 'bad-base64': {
      const { damage } = fuzzCase;
      return damage.how === 'replace' ? `signature character ${damage.position} replaced by "${damage.char}"` : damage.how === 'truncate' ? `signature cut to ${damage.length} characters` : 'signature replaced by garbage';
    }
    case 'oversized-body':
      return `correctly signed, ${fuzzCase.extraBytes + 1} bytes over the limit`;
  }
}

const EXPECT_TEXT: Record<CaseResult['expect'], string> = {
  accept: '2xx',
  reject: 'non-2xx',
  'reject-or-close': 'non-2xx/close',
  'accept-once': '2xx once',
};

const VERDICT_TEXT: Record<CaseResult['verdict'], string> = { pass: 'pass', fail: 'FAIL', warn: 'WARN' };

function answersText(answers: Readonly<Record<string, number>>): string {
  return Object.entries(answers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([answer, count]) => `${answer}×${count}`)
    .join(' ');
}

/** The table of every kind of case: what was expected, what came back, and the verdict. */
export function formatFuzzTable(report: FuzzReport): string {
  const header = ['case', 'expect', 'runs', 'answers', 'verdict'];
  const rows = report.results.map((result) => [result.kind, EXPECT_TEXT[result.expect], String(result.runs), answersText(result.answers), VERDICT_TEXT[result.verdict]]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

const MAX_BODY_SHOWN = 600;

/** A request as a person reads it: headers, then the body as a JSON string literal (whitespace shows). */
export function formatFuzzRequest(request: FuzzRequest, target: string): string {
  const text = Buffer.from(request.body).toString('utf8');
  const shown = text.length > MAX_BODY_SHOWN ? `${JSON.stringify(text.slice(0, MAX_BODY_SHOWN))} … (${text.length - MAX_BODY_SHOWN} more characters)` : JSON.stringify(text);
  const headers = Object.entries(request.headers).map(([name, value]) => `    ${name}: ${value}`);
  return [`    POST ${target}`, ...headers, `    body (${request.body.length} bytes): ${shown}`].join('\n');
}

/**
 * Each failure with its smallest failing delivery and the command that reproduces it; each
 * warning with what it means. `reproduce` is the command line without `--only`.
 */
export function formatFuzzFindings(report: FuzzReport, target: string, reproduce: string): string {
  const blocks: string[] = [];
  for (const result of report.results) {
    if (result.failure) {
      const { failure } = result;
      const sends = failure.requests.length > 1 ? ` (sent ${failure.requests.length} times)` : '';
      const answers = failure.outcomes.map((outcome) => (outcome.status === null ? `no answer: ${outcome.error}` : String(outcome.status))).join(', then ');
      blocks.push(
        [
          `FAIL ${result.kind} (${result.what}): ${failure.reason}`,
          `  smallest failing delivery, after ${failure.shrinks} shrink${failure.shrinks === 1 ? '' : 's'}${sends}; the receiver answered ${answers}:`,
          `    (${describeCase(failure.fuzzCase)})`,
          formatFuzzRequest(failure.requests[0]!, target),
          `  reproduce: ${reproduce} --only ${result.kind}`,
        ].join('\n'),
      );
    } else if (result.verdict === 'warn') {
      blocks.push(`WARN ${result.kind}: ${result.warnings} of ${result.runs} cases: ${result.warning ?? ''}`);
    }
  }
  return blocks.join('\n\n');
}

/** The closing line: counts, and the seed. */
export function formatFuzzSummary(report: FuzzReport): string {
  const passed = report.results.length - report.failed - report.warned;
  if (report.stopped !== null) return `stopped in ${report.results[report.results.length - 1]?.kind ?? 'the first case'}, the other kinds of case not run: ${report.stopped} (seed ${report.seed})`;
  const verdict = report.failed === 0 ? 'the receiver answered every case right' : 'the receiver answered some cases wrong';
  return `${verdict}: of ${report.results.length} kinds of case ${passed} passed, ${report.failed} failed, ${report.warned} warned (seed ${report.seed})`;
}
