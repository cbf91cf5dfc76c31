import { z } from 'zod';
import { CASE_KINDS, CASE_SPECS, DEFAULT_MAX_BODY_BYTES, formatFuzzFindings, formatFuzzSummary, formatFuzzTable, runFuzz } from '../fuzz/index.js';
import type { CaseKind } from '../fuzz/index.js';
import { byteSizeFlag, durationFlag, integerFlag, parseCommandArgs, printedHelp, secretFlag, urlFlag } from './args.js';
import type { CliCommand } from './command.js';
import { createPoster } from './http-post.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';
import { progressBar } from './progress.js';

const kindLines = CASE_KINDS.map((kind) => `  ${kind.padEnd(24)} ${CASE_SPECS[kind].what}`).join('\n');

const HELP = `Usage: hookline fuzz --target URL --secret whsec_… [--seed S] [--runs N] [options]

Fuzzes a webhook receiver: sends it signed deliveries, valid and adversarial, built from seeded
fast-check arbitraries, and judges its answers. Valid deliveries must get a 2xx; every forged or
broken one a non-2xx. On a wrong answer the case is shrunk to the smallest failing delivery, which is
printed with the command that reproduces it. A table of every kind of case ends the run.

Cases:
${kindLines}

Options:
  --target URL        the receiver's endpoint (required)
  --secret whsec_…    the secret the receiver verifies with (or WEBHOOK_SECRET)
  --seed S            seed of the run; the same seed makes the same cases (default: random, printed)
  --runs N            cases per kind, 1-10000 (default 100; oversized-body 5, replayed-webhook-id 20)
  --only K[,K…]       only these kinds of case
  --tolerance S       the receiver's timestamp tolerance in seconds (default 300)
  --max-body SIZE     the receiver's body limit; oversized bodies go just past it (default 1mb)
  --timeout T         per request (default 10s)
  --strict-replay     fail, not warn, when a repeated webhook-id is accepted twice

A repeated webhook-id accepted twice is a warning: answering 2xx to a duplicate is right when the
receiver does not process it again (Hookline's own retries repeat the id), which no answer can show.
Exit status: 0 every case answered right, 1 some did not, 2 bad options.`;

const FLAGS = {
  target: { type: 'string' },
  secret: { type: 'string' },
  seed: { type: 'string' },
  runs: { type: 'string' },
  only: { type: 'string' },
  tolerance: { type: 'string' },
  'max-body': { type: 'string' },
  timeout: { type: 'string' },
  'strict-replay': { type: 'boolean' },
} as const;

function schema(io: CliIo) {
  return z.object({
    target: urlFlag('--target http://127.0.0.1:9000/webhooks'),
    secret: secretFlag(io.env.WEBHOOK_SECRET, '--secret whsec_… (or WEBHOOK_SECRET), the secret the receiver verifies with'),
    seed: integerFlag(-2147483648, 2147483647, Math.floor(Math.random() * 2 ** 31), 'a seed'),
    runs: integerFlag(1, 10_000, 100, 'the cases per kind'),
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
    timeout: durationFlag(10_000),
    'strict-replay': z.boolean().optional(),
    positionals: z.array(z.string()).max(0, 'takes no positional arguments'),
  });
}

/** `hookline fuzz`, talking to `io` (the process by default). */
export function createFuzzCommand(io: CliIo = processIo()): CliCommand {
  return {
    name: 'fuzz',
    summary: 'fuzz a webhook receiver with valid and forged signed deliveries',
    help: HELP,
    async run(args) {
      if (printedHelp(io, args, HELP)) return 0;
      const parsed = parseCommandArgs(io, 'fuzz', args, FLAGS, schema(io));
      if (!parsed.ok) return parsed.exitCode;
      const options = parsed.value;
      const maxBodyBytes = options['max-body'];
      io.stdout.write(`fuzzing ${options.target} with seed ${options.seed}, up to ${options.runs} cases per kind\n`);
      const poster = createPoster(options.target, options.timeout);
      const progress = progressBar(io.stderr, 'fuzz');
      try {
        const report = await runFuzz({
          secret: options.secret,
          seed: options.seed,
          runs: options.runs,
          ...(options.only ? { kinds: options.only } : {}),
          toleranceSeconds: options.tolerance,
          maxBodyBytes,
          strictReplay: options['strict-replay'] ?? false,
          send: (request) => poster.post(request.headers, request.body),
          onProgress: ({ done, total, kind, shrinking }) => progress.update(done, total, shrinking ? `${kind}: shrinking` : kind),
        });
        progress.finish();
        const extra = [
          options.tolerance !== 300 ? ` --tolerance ${options.tolerance}` : '',
          maxBodyBytes !== DEFAULT_MAX_BODY_BYTES ? ` --max-body ${maxBodyBytes}b` : '',
          options['strict-replay'] ? ' --strict-replay' : '',
        ].join('');
        const reproduce = `hookline fuzz --target ${options.target} --secret "$WEBHOOK_SECRET" --seed ${options.seed} --runs ${options.runs}${extra}`;
        const findings = formatFuzzFindings(report, options.target, reproduce);
        io.stdout.write(`\n${formatFuzzTable(report)}\n\n${findings === '' ? '' : `${findings}\n\n`}${formatFuzzSummary(report)}\n`);
        return report.failed === 0 && report.stopped === null ? 0 : 1;
      } finally {
        progress.finish();
        await poster.close();
      }
    },
  };
}

export const fuzzCommand: CliCommand = createFuzzCommand();
