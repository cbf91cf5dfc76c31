import { counted } from '../plural.js';
import type { FuzzExchange, FuzzRequest } from './build.js';
import type { Reproduction } from './report-json.js';
import { TIMESTAMP_MARGIN_SECONDS, tamperedTypeOf } from './build.js';
import type { FuzzCase } from './cases.js';
import type { Measurements, WindowSide } from './measure.js';
import type { CaseResult, DuplicateExpectation, FailureClass, FuzzReport } from './run.js';
import type { StallOutcome } from './wire.js';
import { textTable } from '../text-table.js';

/** What makes a case what it is, in a few words, shown with its smallest failing delivery. */
export function describeCase(fuzzCase: FuzzCase): string {
  switch (fuzzCase.kind) {
    case 'valid':
      return `webhook-timestamp ${fuzzCase.delivery.offsetSeconds >= 0 ? '+' : ''}${fuzzCase.delivery.offsetSeconds} s from now`;
    case 'valid-utf8':
      return `data.text ${JSON.stringify(fuzzCase.text)}`;
    case 'valid-chunked':
      return `data.text is ${JSON.stringify(fuzzCase.filler)} repeated; written in ${fuzzCase.transfer.pieces} pieces, ${fuzzCase.transfer.framing}`;
    case 'valid-rotation': {
      const position = (fuzzCase.position % fuzzCase.candidates) + 1;
      return `${counted(fuzzCase.candidates, 'candidate')}, the right one ${position === 1 ? 'first' : `at position ${position}`}`;
    }
    case 'id-squatting':
      return `a forged request (${fuzzCase.forgery}) with the webhook-id, twice, then the genuine delivery with the same id; then, as controls, a delivery with a fresh id and its repeat`;
    case 'repeated-webhook-id':
      return `sent, then sent again with the same webhook-id, re-signed ${fuzzCase.laterSeconds} s later`;
    case 'concurrent-duplicates':
      return `${fuzzCase.copies} copies sent at once`;
    case 'wrong-secret':
      return 'signed with another secret';
    case 'tampered-body': {
      const { tamper } = fuzzCase;
      const change =
        tamper.how === 'byte' ? `byte ${tamper.position} of the body XOR ${tamper.flip}`
        : tamper.how === 'data' ? `data key t_${tamper.key} added`
        : tamper.how === 'event-type' ? `the type changed to ${tamperedTypeOf(fuzzCase.delivery.eventType, tamper.type)}`
        : 'the event id changed';
      return `after signing, ${change}`;
    }
    case 'stale-timestamp':
    case 'future-timestamp':
      return `signed; webhook-timestamp ${fuzzCase.beyondSeconds + TIMESTAMP_MARGIN_SECONDS} s beyond the tolerance, in the ${fuzzCase.kind === 'stale-timestamp' ? 'past' : 'future'}`;
    case 'reserialised-json':
      return `signed as Hookline spells it (JSON.stringify), sent spelled ${fuzzCase.sentStyle}`;
    case 'missing-header':
      return `no ${fuzzCase.header} header`;
    case 'garbage-header':
      return `${fuzzCase.header} replaced by garbage; the signature is over the real value`;
    case 'unknown-version':
      return `the right signature under "${fuzzCase.version},"`;
    case 'bad-base64': {
      const { damage } = fuzzCase;
      return damage.how === 'replace' ? `signature character ${damage.position} replaced by "${damage.char}"` : damage.how === 'truncate' ? `signature cut to ${counted(damage.length, 'character')}` : 'signature replaced by garbage';
    }
    case 'oversized-body':
      return `correctly signed, ${counted(fuzzCase.extraBytes + 1, 'byte')} over the limit`;
  }
}

const EXPECT_TEXT: Record<CaseResult['expect'], string> = {
  accept: '2xx',
  reject: 'non-2xx',
  'reject-or-close': 'non-2xx/close',
  'accept-after-forgery': 'non-2xx ×2, 2xx as new',
  'accept-repeat': '2xx, 2xx',
  'accept-concurrent': 'all 2xx',
};

function answersText(answers: Readonly<Record<string, number>>): string {
  return Object.entries(answers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([answer, count]) => `${answer}×${count}`)
    .join(' ');
}

const verdictText = (result: CaseResult) => (result.verdict === 'fail' ? `FAIL (${result.failedRuns} of ${result.runs})` : result.verdict === 'undecided' ? 'could not be decided' : 'pass');

/** The table of every kind of case: what was expected, what came back, and the verdict. */
export function formatFuzzTable(report: FuzzReport, expectDuplicate: DuplicateExpectation = '2xx'): string {
  const expectText = (result: CaseResult) => (expectDuplicate === 'any' && (result.expect === 'accept-repeat' || result.expect === 'accept-concurrent') ? '2xx, any' : EXPECT_TEXT[result.expect]);
  const rows = report.results.map((result) => [result.kind, expectText(result), String(result.runs), answersText(result.answers), verdictText(result)]);
  const header = ['case', 'expect', 'runs', 'answers', 'verdict'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  return textTable([header, widths.map((width) => '-'.repeat(width)), ...rows]).join('\n');
}

const SHOWN_CHARACTERS = 200;

/** A body as a JSON string literal (whitespace shows), long runs of one character counted, cut at 200 characters. */
export function bodyPreview(body: Uint8Array): string {
  const text = Buffer.from(body).toString('utf8').replace(/(.)\1{15,}/gsu, (run: string, char: string) => `${char}…(${[...run].length}×)`);
  return text.length > SHOWN_CHARACTERS ? `${JSON.stringify(text.slice(0, SHOWN_CHARACTERS))} …` : JSON.stringify(text);
}

/** A request as a person reads it: headers, then the body. */
export function formatFuzzRequest(request: FuzzRequest, target: string): string {
  const headers = Object.entries(request.headers).map(([name, value]) => `    ${name}: ${value}`);
  const transfer = request.transfer ? `, ${request.transfer.framing}, written in ${request.transfer.splits.length + 1} pieces cut at bytes ${request.transfer.splits.join(', ')}` : '';
  return [`    POST ${target}`, ...headers, `    body (${counted(request.body.length, 'byte')}${transfer}): ${bodyPreview(request.body)}`].join('\n');
}

/** What a replay of `exchange` sends, in a few words: its label. */
export function exchangeText(exchange: FuzzExchange): string {
  const [first] = exchange.requests;
  if (exchange.concurrent) return `${exchange.requests.length} copies of one request at once`;
  if (exchange.requests.length > 1) return `${exchange.requests.length} requests in turn`;
  if (first?.transfer) return `1 request, ${first.transfer.framing}, written in ${first.transfer.splits.length + 1} pieces cut at bytes ${first.transfer.splits.join(', ')}`;
  return '1 request';
}

/** Each failure class with its smallest failing delivery and the commands that send it again as it was sent. */
export function formatFuzzFindings(report: FuzzReport, target: string, reproduce: (result: CaseResult, failure: FailureClass, index: number) => Reproduction): string {
  const blocks: string[] = [];
  for (const result of report.results) {
    for (const [index, failure] of result.failures.entries()) {
      const sends = failure.exchange.requests.length > 1 ? ` (${failure.exchange.requests.length} requests${failure.exchange.concurrent ? ' at once' : ', in turn'})` : '';
      const answers = failure.outcomes.map((outcome) => (outcome.status === null ? `no answer: ${outcome.error}` : String(outcome.status))).join(', then ');
      const { replay, curl } = reproduce(result, failure, index);
      const lines = [
        `FAIL ${result.kind} (${result.what}): ${failure.reason}; ${failure.runs} of ${counted(result.runs, 'run')}`,
        ...(index === 0 && result.diagnosis ? [`  diagnosis: ${result.diagnosis}`] : []),
        `  smallest failing delivery, after ${counted(failure.shrinks, 'shrink')}${sends}; the receiver answered ${answers}:`,
        `    (${describeCase(failure.fuzzCase)})`,
        ...(failure.exchange.concurrent ? failure.exchange.requests.slice(0, 1) : failure.exchange.requests).map((request) => formatFuzzRequest(request, target)),
        `  reproduce (${exchangeText(failure.exchange)}, as the run sent it, with a new webhook-id and timestamp; the secret from --secret or WEBHOOK_SECRET): ${replay}`,
        ...curl.map((command) => `  or with curl (the same request, signed at the run's time: within the receiver's tolerance): ${command ?? 'the body is too large to show here: add --save-failures DIR for a curl command reading it from a file'}`),
      ];
      blocks.push(lines.join('\n'));
    }
  }
  return blocks.join('\n\n');
}

const seconds = (value: number) => (value >= 86_400 ? `${value} s (${(value / 86_400).toFixed(1)} days)` : `${value} s`);

function windowText(side: WindowSide, direction: string): string {
  if (side.acceptedSeconds === null) return `${direction}: not even a current timestamp is accepted`;
  return side.unbounded ? `${direction}: accepted up to the probe's cap, ${seconds(side.acceptedSeconds)}: no check` : `${direction}: accepted up to ${seconds(side.acceptedSeconds)}`;
}

function stallText(outcome: StallOutcome): string {
  const after = `${(outcome.afterMs / 1000).toFixed(1)} s`;
  if (outcome.result === 'answered') return `answered ${outcome.status} after ${after}`;
  if (outcome.result === 'closed') return `closed the connection after ${after}, without an answer`;
  return `still waiting after ${after}: a client that stops mid-body holds a connection (set a body or request timeout)`;
}

/** The measured figures, one line each. */
export function formatMeasurements(measurements: Measurements, toleranceSeconds: number, maxBodyBytes: number): string {
  const { past, future } = measurements.timestampWindow;
  const body = measurements.largestBody;
  const bodyText =
    body.acceptedBytes === null ? 'not even a small valid body is accepted'
    : body.unbounded ? `accepted up to the probe's cap, ${counted(body.capBytes, 'byte')}: no size limit found`
    : `about ${counted(body.acceptedBytes, 'byte')}`;
  return [
    `measured (correctly signed deliveries; --tolerance ${toleranceSeconds}, --max-body ${maxBodyBytes}):`,
    `  timestamp window   ${windowText(past, 'past')}; ${windowText(future, 'future')}`,
    `  largest body       ${bodyText}`,
    `  slow body          half sent, then nothing: ${stallText(measurements.slowBody)}`,
    `  content-length     64 bytes more than sent, then FIN: ${stallText(measurements.longContentLength)}; 16 bytes fewer: ${measurements.shortContentLength.status ?? 'no answer'}`,
  ].join('\n');
}

/** The closing line: counts, and the seed. */
export function formatFuzzSummary(report: FuzzReport, measurementFailures: readonly string[] = []): string {
  const passed = report.results.filter((result) => result.verdict === 'pass').length;
  const undecided = report.results.filter((result) => result.verdict === 'undecided');
  if (report.stopped !== null) return `stopped in ${report.results[report.results.length - 1]?.kind ?? 'the first case'}, the other kinds of case not run: ${report.stopped} (seed ${report.seed})`;
  const classes = report.results.reduce((sum, result) => sum + result.failures.length, 0);
  const ok = report.failed === 0 && measurementFailures.length === 0;
  const verdict = ok ? 'the receiver answered every case right' : 'the receiver answered some cases wrong';
  const measured = measurementFailures.length > 0 ? `; ${measurementFailures.join('; ')}` : '';
  const cause = [...(report.diagnosis === null ? [] : [`\ndiagnosis: ${report.diagnosis}`]), ...undecided.map((result) => `\n${result.kind} could not be decided: ${result.undecided}`)].join('');
  return `${verdict}: of ${counted(report.results.length, 'kind of case', 'kinds of case')} ${passed} passed, ${report.failed} failed (${counted(classes, 'failure class', 'failure classes')})${undecided.length > 0 ? `, ${undecided.length} could not be decided` : ''}${measured} (seed ${report.seed})${cause}`;
}
