import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { z } from 'zod';
import {
  CASE_KINDS,
  CASE_SPECS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_RUNS,
  curlCommand,
  formatFuzzFindings,
  formatFuzzSummary,
  formatFuzzTable,
  formatMeasurements,
  CORPUS_EVENTS,
  loadApiCorpus,
  loadCorpus,
  measureReceiver,
  measurementFailures,
  runFuzz,
  saveFailure,
  sendStalled,
  sendWire,
  toJsonReport,
  toJunit,
  validProbe,
} from '../fuzz/index.js';
import type { CaseKind, CaseResult, FailureClass, Measurements } from '../fuzz/index.js';
import { environmentSetting } from '../config/settings.js';
import { counted } from '../plural.js';
import { HooklineClient, NETWORK_ERROR_CODE, isHooklineApiError } from '../sdk/index.js';
import { decodeSecret } from '../signing/secret.js';
import { maskUrlCredentials } from '../transport/url-credentials.js';
import { NO_POSITIONALS, byteSizeFlag, commandWithHelp, deliveryTimeoutFlag, durationFlag, headerFlag, integerFlag, runParsed, secretFlag, urlFlag, usageProblem } from './args.js';
import type { CliCommand } from './command.js';
import { connectProblem } from './http-post.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';
import { progressBar } from './progress.js';
import { projectFlag } from './replay.js';
import { replayCase, reproducer } from './fuzz-replay.js';
import { exportVectors } from './fuzz-vectors.js';

const kindLines = CASE_KINDS.map((kind) => `  ${kind.padEnd(24)} ${CASE_SPECS[kind].what}`).join('\n');

const HELP = `Usage: hookline fuzz --target URL --secret whsec_… [--seed S] [--runs N] [options]
       hookline fuzz --replay-case FILE [--target URL] [--secret whsec_…]
       hookline fuzz --export-vectors DIR [--secret whsec_…] [--seed S] [--runs N] [--max-body SIZE]

Fuzzes a webhook receiver: sends it signed deliveries, valid and adversarial, built from seeded
fast-check arbitraries, and judges its answers. Valid deliveries must get a 2xx; every forged or
broken one a non-2xx; a repeated webhook-id a 2xx. Every kind runs all its cases; each distinct
wrong answer is shrunk to its smallest delivery and printed with a curl command that sends exactly
that request. Then it measures the receiver's edges: the timestamp window it really accepts, the
largest body, a stalled body and a lying content-length.

Cases:
${kindLines}

Options:
  --target URL           the receiver's endpoint (required)
  --secret whsec_…       the secret the receiver verifies with (or WEBHOOK_SECRET)
  --seed S               seed of the run; the same seed makes the same cases (default: random, printed)
  --runs N               cases per kind, 1-10000 (default ${DEFAULT_RUNS}; some kinds fewer, see README)
  --only K[,K…]          only these kinds of case
  --tolerance S          the receiver's timestamp tolerance in seconds (default 300)
  --max-body SIZE        the receiver's body limit: oversized bodies go just past it, valid ones up to it but
                         never past Hookline's largest delivery (HOOKLINE_MAX_BODY, else 256kb, + 1kb) (default 1mb)
  --expect-duplicate E   what a repeated webhook-id must get: 2xx (default) or any
  --header 'N: V'        sent with every request, unsigned, as the webhook's custom headers are with
                         real deliveries (repeatable; e.g. a token the receiver requires)
  --corpus DIR|URL       build bodies from the newest ${CORPUS_EVENTS} events a Hookline stored: in the data
                         directory DIR (read-only), or asked of a running Hookline at URL (GET /v1/events)
  --project ID           the project of --corpus DIR (default: default)
  --api-key KEY          the project's key for --corpus URL (default HOOKLINE_API_KEY)
  --format F             text (default); json: one JSON report on stdout (docs/fuzz-report.schema.json);
                         junit: JUnit XML on stdout (as --junit FILE writes)
  --junit FILE           also write the result as JUnit XML
  --save-failures DIR    write each failure's case file there (default: a new temp directory), and its
                         requests (JSON and body files) for curl to send again
  --replay-case FILE     send a failing case again as the run sent it (pieces, order, copies at once),
                         with a new webhook-id and timestamp, and judge it (--target, --secret optional)
  --export-vectors DIR   write the single-request cases as JSON test vectors (docs/fuzz-vectors.md) to
                         DIR/hookline-fuzz-vectors.json: no receiver needed (--runs default 10, --max-body 64kb)
  --skip-measure         judge only; do not measure the timestamp window, body size and stalls
  --stall-wait T         how long a stalled request waits for the receiver (default 5s)
  --timeout T            per request (default HOOKLINE_DELIVERY_TIMEOUT, else 15s: what real deliveries wait)

A repeated webhook-id must get a 2xx: Hookline sends an id again when it saw no 2xx, so refusing a
repeat dead-letters events already processed. --expect-duplicate any accepts any answer to repeats.
Exit status: 0 nothing failed, 1 something did (or the target does not answer), 2 bad options
(or a --corpus URL that cannot be reached or refuses the key).`;

const FLAGS = {
  target: { type: 'string' },
  secret: { type: 'string' },
  seed: { type: 'string' },
  runs: { type: 'string' },
  only: { type: 'string' },
  tolerance: { type: 'string' },
  'max-body': { type: 'string' },
  'expect-duplicate': { type: 'string' },
  header: { type: 'string', multiple: true },
  corpus: { type: 'string' },
  project: { type: 'string' },
  'api-key': { type: 'string' },
  format: { type: 'string' },
  junit: { type: 'string' },
  'save-failures': { type: 'string' },
  'skip-measure': { type: 'boolean' },
  'stall-wait': { type: 'string' },
  timeout: { type: 'string' },
} as const;

function schema(io: CliIo) {
  return z.object({
    target: urlFlag('--target http://127.0.0.1:9000/webhooks'),
    secret: secretFlag(io.env.WEBHOOK_SECRET, 'give the secret the receiver verifies with'),
    seed: integerFlag(-2147483648, 2147483647, Math.floor(Math.random() * 2 ** 31), 'a seed'),
    runs: integerFlag(1, 10_000, DEFAULT_RUNS, 'the cases per kind'),
    only: z
      .string()
      .optional()
      .transform((text, context) => {
        if (text === undefined) return undefined;
        const kinds = text.split(',').map((kind) => kind.trim()).filter(Boolean);
        const unknown = kinds.filter((kind) => !(CASE_KINDS as string[]).includes(kind));
        if (kinds.length === 0 || unknown.length > 0) {
          context.addIssue({ code: 'custom', message: `unknown kind of case ${unknown.join(', ') || '(none)'}; one or more of: ${CASE_KINDS.join(', ')}` });
          return z.NEVER;
        }
        return kinds as CaseKind[];
      }),
    tolerance: integerFlag(0, 30 * 24 * 3600, 300, 'seconds'),
    'max-body': byteSizeFlag(DEFAULT_MAX_BODY_BYTES),
    'expect-duplicate': z.enum(['2xx', 'any'], { error: 'must be 2xx or any' }).default('2xx'),
    header: headerFlag,
    corpus: z.string().min(1, 'must name a data directory or a Hookline URL').optional(),
    project: projectFlag,
    'api-key': z.string().optional().transform((key) => key ?? io.env.HOOKLINE_API_KEY),
    format: z.enum(['text', 'json', 'junit'], { error: 'must be text, json or junit' }).default('text'),
    junit: z.string().min(1, 'must name a file').optional(),
    'save-failures': z.string().min(1, 'must name a directory').optional(),
    'skip-measure': z.boolean().optional(),
    'stall-wait': durationFlag(5_000),
    timeout: deliveryTimeoutFlag(io.env),
    positionals: NO_POSITIONALS,
  }).superRefine((options, context) => {
    if (options.corpus === undefined || !isUrl(options.corpus)) return;
    if (!options['api-key']) context.addIssue({ code: 'custom', path: ['api-key'], message: "is required with --corpus URL: pass the project's key with --api-key or set HOOKLINE_API_KEY" });
  });
}

const isUrl = (text: string) => /^https?:\/\//i.test(text);

/**
 * The corpus of `--corpus URL`, or the exit code after one line: 2 when the API cannot be reached or
 * refuses the key (a setting to fix, like a bad option), 1 when the project has no events (as for a DIR).
 */
async function apiCorpus(io: CliIo, url: string, apiKey: string): Promise<Uint8Array[] | 1 | 2> {
  try {
    return await loadApiCorpus(new HooklineClient({ baseUrl: url, apiKey }));
  } catch (error) {
    if (!isHooklineApiError(error)) {
      io.stderr.write(`hookline fuzz: --corpus: ${url}: ${(error as Error).message}\n`);
      return 1;
    }
    if (error.code === NETWORK_ERROR_CODE) io.stderr.write(`hookline fuzz: --corpus: cannot reach Hookline at ${url} (${error.message}); is it running?\n`);
    else io.stderr.write(`hookline fuzz: --corpus: ${url} answered ${error.status} ${error.code}: ${error.message}${error.status === 401 ? '; check --api-key (or HOOKLINE_API_KEY)' : ''}\n`);
    return 2;
  }
}

/** `hookline fuzz`, talking to `io` (the process by default). */
export function createFuzzCommand(io: CliIo = processIo()): CliCommand {
  const command = { name: 'fuzz', help: HELP };
  return commandWithHelp(io, command, async (args) => {
    // The old flag judged a 2xx to a repeat as a failure, which is backwards for at-least-once delivery.
    const given = (flag: string) => args.some((arg) => arg === flag || arg.startsWith(`${flag}=`));
    if (given('--replay-case')) return replayCase(io, args);
    if (given('--export-vectors')) return exportVectors(io, args);
    if (args.includes('--strict-replay')) return usageProblem(io, 'fuzz', ['--strict-replay is gone: a repeated webhook-id must now get a 2xx, as at-least-once delivery needs; --expect-duplicate any accepts any answer']);
    return runParsed(io, 'fuzz', args, FLAGS, schema(io), async (options) => {
      if (options.corpus !== undefined && isUrl(options.corpus) && args.some((arg) => arg === '--project' || arg.startsWith('--project='))) {
        return usageProblem(io, 'fuzz', ['--project is for --corpus DIR: with --corpus URL the API key names the project']);
      }
      // Valid bodies stay within what the Hookline configured by this environment can deliver.
      const hooklineMaxBody = environmentSetting('HOOKLINE_MAX_BODY', io.env);
      if (!hooklineMaxBody.ok) {
        io.stderr.write(`hookline fuzz: ${hooklineMaxBody.problem}; fix it, or unset it\n`);
        return 2;
      }
      const target = new URL(options.target);
      // Status lines end up in CI logs: they show the target's password as ***. The findings keep
      // it, as their curl commands must send it.
      const shownTarget = maskUrlCredentials(options.target);
      const maxBodyBytes = options['max-body'];
      const key = decodeSecret(options.secret)!;
      // junit, like json, is one document on stdout and nothing else.
      const json = options.format !== 'text';
      const say = (text: string) => void (json ? undefined : io.stdout.write(text));
      // A target nobody listens on, or that never answers, would fail every case: say so at once, without shrinking.
      const unreachable = await connectProblem(options.target, options.timeout);
      if (unreachable !== null) {
        io.stderr.write(`hookline fuzz: cannot connect to ${shownTarget} (${unreachable}); start the receiver, or check --target\n`);
        return 1;
      }
      const runTag = Date.now().toString(36);
      let probes = 0;
      const probeId = () => `msg_probe_${runTag}${(probes++).toString(36)}`;
      const customHeaders = options.header;
      const context = () => ({ key, webhookId: probeId(), nowSeconds: Math.floor(Date.now() / 1000), toleranceSeconds: options.tolerance, maxBodyBytes, customHeaders });
      const first = await sendWire(target, validProbe(context()), options.timeout);
      if (first.status === null) {
        io.stderr.write(`hookline fuzz: ${shownTarget} took the connection but did not answer a valid delivery (${first.error}); is it a webhook receiver, and running?\n`);
        return 1;
      }
      let corpus: Uint8Array[] | undefined;
      if (options.corpus !== undefined && isUrl(options.corpus)) {
        const loaded = await apiCorpus(io, options.corpus, options['api-key']!);
        if (typeof loaded === 'number') return loaded;
        corpus = loaded;
      } else if (options.corpus !== undefined) {
        try {
          corpus = await loadCorpus(options.corpus, options.project);
        } catch (error) {
          io.stderr.write(`hookline fuzz: --corpus: ${(error as Error).message}\n`);
          return 1;
        }
      }
      say(`fuzzing ${shownTarget} with seed ${options.seed}, up to ${counted(options.runs, 'case')} per kind${corpus ? `, bodies from ${counted(corpus.length, 'stored event')}` : ''}\n`);
      const progress = progressBar(io.stderr, 'fuzz');
      try {
        const report = await runFuzz({
          secret: options.secret,
          seed: options.seed,
          runs: options.runs,
          ...(options.only ? { kinds: options.only } : {}),
          ...(corpus ? { corpus } : {}),
          toleranceSeconds: options.tolerance,
          maxBodyBytes,
          hooklineMaxBodyBytes: hooklineMaxBody.value,
          expectDuplicate: options['expect-duplicate'],
          customHeaders,
          send: (request) => sendWire(target, { headers: request.headers, body: request.body, ...(request.transfer ? { framing: request.transfer.framing, splits: request.transfer.splits } : {}) }, options.timeout),
          onProgress: ({ done, total, kind, shrinking }) => progress.update(done, total, shrinking ? `${kind}: shrinking` : kind),
        });
        let measurements: Measurements | null = null;
        if (!options['skip-measure'] && report.stopped === null) {
          progress.update(1, 1, 'measuring');
          measurements = await measureReceiver({
            key,
            toleranceSeconds: options.tolerance,
            maxBodyBytes,
            stallWaitMs: options['stall-wait'],
            customHeaders,
            newWebhookId: probeId,
            send: (request) => sendWire(target, request, options.timeout),
            stall: (request, waitMs) => sendStalled(target, request, waitMs),
          });
        }
        progress.finish();
        const measured = measurements ? measurementFailures(measurements) : [];
        const reproduce = reproducer(report, { target: options.target, toleranceSeconds: options.tolerance, maxBodyBytes, expectDuplicate: options['expect-duplicate'], customHeaders: customHeaders ?? {}, corpus, saveDir: options['save-failures'], tempRoot: io.env.TMPDIR || tmpdir() });
        const jsonReport = toJsonReport({ report, target: options.target, measurements, measurementFailures: measured, reproduce });
        if (options.junit !== undefined) writeFileSync(options.junit, toJunit(jsonReport));
        if (options.format === 'junit') {
          io.stdout.write(toJunit(jsonReport));
        } else if (json) {
          io.stdout.write(`${JSON.stringify(jsonReport)}\n`);
        } else {
          const findings = formatFuzzFindings(report, options.target, reproduce);
          const figures = measurements ? `${formatMeasurements(measurements, options.tolerance, maxBodyBytes)}\n\n` : '';
          say(`\n${formatFuzzTable(report, options['expect-duplicate'])}\n\n${figures}${findings === '' ? '' : `${findings}\n\n`}${formatFuzzSummary(report, measured)}\n`);
        }
        return jsonReport.ok ? 0 : 1;
      } finally {
        progress.finish();
      }
    });
  });
}

export const fuzzCommand: CliCommand = createFuzzCommand();
