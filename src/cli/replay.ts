import { z } from 'zod';
import { parseDuration } from '../config/duration.js';
import { isoTime } from '../iso-time.js';
import { counted } from '../plural.js';
import { EVENT_TYPES } from '../sdk/types.js';
import { newSortableId } from '../store/ids.js';
import { EventLogReader } from '../replay/event-log.js';
import { replayEvents, seededRandom } from '../replay/replay-run.js';
import { maskUrlCredentials } from '../transport/url-credentials.js';
import { NO_POSITIONALS, defineCommand, deliveryTimeoutFlag, durationFlag, headerFlag, integerFlag, positiveNumberFlag, secretsFlag, urlFlag } from './args.js';
import type { CliCommand } from './command.js';
import { createPoster } from './http-post.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';
import { progressBar } from './progress.js';

const HELP = `Usage: hookline replay --from TIME [--to TIME] [--type T] --target URL --secret whsec_… [options]

Re-sends events stored by Hookline to another target, such as a staging receiver: each one is the
stored envelope byte for byte, signed (Standard Webhooks) with the secret given here under a fresh
webhook-id (rpl_…), with Hookline's user-agent and the --header ones, oldest first, one at a time
and at most --rate a second. Nothing is recorded in
Hookline: the delivery log and the live deliveries are untouched. A summary of the answers and the
latency (p50, p99, max) ends it.

As a load and soak tool for a receiver: --concurrency sends in parallel, --duration loops the
selection (fresh ids each pass) for that long, and --shuffle and --duplicates P add the disorder
at-least-once delivery causes (a duplicate repeats a send's webhook-id and body, re-signed, later).

It reads the events from the node's LMDB directory, read-only (the API does not serve envelopes);
LMDB allows this while the node runs. Run it on the node's machine.

Options:
  --from TIME      events accepted at or after TIME: ISO 8601 (2026-05-01T10:00:00Z) or a
                   duration ago (30m, 2h, 7d)  (required)
  --to TIME        events accepted before TIME (default: now)
  --type T         only events of type T (${EVENT_TYPES.join(', ')})
  --target URL     where to send them (required)
  --secret whsec_… the target's secret (or WEBHOOK_SECRET); give it again for each secret of a
                   rotation, newest first: every send is signed by each, as deliveries are then
  --header 'N: V'  a header to send with every request, as an endpoint's custom headers are sent
                   with its deliveries (repeatable; not webhook-*, content-type or hop-by-hop ones)
  --rate R         at most R sends a second (default 10)
  --concurrency N  sends in flight at once, 1-256 (default 1)
  --duration T     loop the selection until T has passed (e.g. 10m; default: one pass)
  --duplicates P   the chance, 0-1, that a send is repeated later with the same webhook-id (default 0)
  --shuffle        send each pass in a random order
  --seed S         seed of the shuffle and the duplicates (default: random, printed)
  --timeout T      per send (default HOOKLINE_DELIVERY_TIMEOUT, else 15s: what real deliveries wait)
  --data-dir DIR   the node's data directory (default HOOKLINE_DATA_DIR, else ./data)
  --project ID     the project whose events to send (default: default)
  --dry-run        list the events that would be sent, send nothing

Exit status: 0 every send answered 2xx (or nothing matched), 1 some did not, 2 bad options.`;

const FLAGS = {
  from: { type: 'string' },
  to: { type: 'string' },
  type: { type: 'string' },
  target: { type: 'string' },
  secret: { type: 'string', multiple: true },
  header: { type: 'string', multiple: true },
  rate: { type: 'string' },
  concurrency: { type: 'string' },
  duration: { type: 'string' },
  duplicates: { type: 'string' },
  shuffle: { type: 'boolean' },
  seed: { type: 'string' },
  timeout: { type: 'string' },
  'data-dir': { type: 'string' },
  project: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const;

/** `--project ID` of the commands that read a data directory. */
export const projectFlag = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a project id (A-Z a-z 0-9 _ -)').default('default');

const TIME_HINT = 'an ISO 8601 time (2026-05-01T10:00:00Z) or a duration ago (30m, 2h, 7d)';

/** `TIME` of --from/--to: an ISO 8601 date-time, or a duration meaning that long before `nowMs`. */
export function parseTimeFlag(text: string, nowMs: number): number | null {
  const trimmed = text.trim();
  if (/^\d+(ms|s|m|h|d)$/i.test(trimmed)) return nowMs - parseDuration(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/i.test(trimmed)) return null;
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? null : ms;
}

function timeFlag(nowMs: number) {
  return z.string().transform((text, context) => {
    const ms = parseTimeFlag(text, nowMs);
    if (ms === null) {
      context.addIssue({ code: 'custom', message: `must be ${TIME_HINT} (got ${JSON.stringify(text)})` });
      return z.NEVER;
    }
    return ms;
  });
}

function schema(io: CliIo, nowMs: number) {
  return z
    .object({
      from: z.string({ error: `is required: ${TIME_HINT}` }).pipe(timeFlag(nowMs)),
      to: timeFlag(nowMs).optional(),
      type: z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }).optional(),
      target: urlFlag('--target https://staging.example.com/webhooks'),
      secret: secretsFlag(io.env.WEBHOOK_SECRET, "give the target's secret (the one it verifies with)"),
      header: headerFlag,
      rate: positiveNumberFlag(10_000, 10, 'sends a second'),
      concurrency: integerFlag(1, 256, 1, 'sends in flight'),
      duration: durationFlag(0).optional(),
      duplicates: z
        .string()
        .optional()
        .transform((text, context) => {
          if (text === undefined) return 0;
          const value = Number(text);
          if (text.trim() === '' || !(value >= 0 && value <= 1)) {
            context.addIssue({ code: 'custom', message: `must be a chance from 0 to 1 (got ${JSON.stringify(text)})` });
            return z.NEVER;
          }
          return value;
        }),
      shuffle: z.boolean().optional(),
      seed: integerFlag(-2147483648, 2147483647, Math.floor(Math.random() * 2 ** 31), 'a seed'),
      timeout: deliveryTimeoutFlag(io.env),
      'data-dir': z.string().min(1, 'must name a directory').default(io.env.HOOKLINE_DATA_DIR || './data'),
      project: projectFlag,
      'dry-run': z.boolean().optional(),
      positionals: NO_POSITIONALS,
    })
    .refine((options) => options.to === undefined || options.to > options.from, { message: 'must be later than --from', path: ['to'] });
}

/** `hookline replay`, talking to `io` (the process by default). */
export function createReplayCommand(io: CliIo = processIo()): CliCommand {
  return defineCommand(io, {
    name: 'replay',
    help: HELP,
    flags: FLAGS,
    schema: () => schema(io, Date.now()),
    async run(options) {
      const projectId = options.project;
      let reader: EventLogReader;
      try {
        reader = EventLogReader.open(options['data-dir']);
      } catch (error) {
        io.stderr.write(`hookline replay: ${(error as Error).message}\n`);
        return 1;
      }
      try {
        if (!reader.hasProject(projectId)) {
          const known = reader.projects().map((project) => project.id);
          io.stderr.write(`hookline replay: project "${projectId}" does not exist in ${options['data-dir']}; check --project (${known.length === 0 ? 'it holds no projects' : `it holds ${known.map((id) => `"${id}"`).join(', ')}`}, as hookline keys list shows)\n`);
          return 1;
        }
        const events = reader.select({ projectId, from: options.from, ...(options.to !== undefined ? { to: options.to } : {}), ...(options.type ? { type: options.type } : {}) });
        const window = `accepted from ${isoTime(options.from)}${options.to !== undefined ? ` to ${isoTime(options.to)}` : ''}${options.type ? ` of type ${options.type}` : ''}`;
        if (events.length === 0) {
          io.stdout.write(`no stored events of project "${projectId}" ${window} in ${options['data-dir']}: nothing to replay\n`);
          return 0;
        }
        if (options['dry-run']) {
          io.stdout.write(`would replay ${counted(events.length, 'event')} of project "${projectId}" ${window} to ${maskUrlCredentials(options.target)}:\n`);
          for (const event of events) io.stdout.write(`  ${event.id}  ${event.type}  ${isoTime(event.createdAt)}  ${counted(reader.envelope(projectId, event.id)?.length ?? 0, 'byte')}\n`);
          return 0;
        }
        const load = [
          options.concurrency > 1 ? `, ${options.concurrency} at once` : '',
          options.duration ? `, looping for ${(options.duration / 1000).toFixed(0)} s` : '',
          options.shuffle ? ', shuffled' : '',
          options.duplicates > 0 ? `, ${options.duplicates * 100}% duplicated` : '',
          options.shuffle || options.duplicates > 0 ? ` (seed ${options.seed})` : '',
        ].join('');
        io.stdout.write(`replaying ${counted(events.length, 'event')} of project "${projectId}" ${window} to ${maskUrlCredentials(options.target)}, at most ${options.rate} a second${load}\n`);
        // As many connections as sends in flight: with fewer, the rest waited signed, their timestamps ageing.
        const poster = createPoster(options.target, options.timeout, options.concurrency);
        const progress = progressBar(io.stderr, 'replay');
        try {
          const summary = await replayEvents({
            events,
            load: (event) => reader.envelope(projectId, event.id),
            secrets: options.secret,
            headers: options.header,
            ratePerSecond: options.rate,
            concurrency: options.concurrency,
            ...(options.duration ? { durationMs: options.duration } : {}),
            duplicateRate: options.duplicates,
            shuffle: options.shuffle ?? false,
            random: seededRandom(options.seed),
            send: (headers, body) => poster.post(headers, body),
            newWebhookId: () => newSortableId('rpl', Date.now()),
            signal: io.stopSignal(),
            onProgress: (done, total, event) => progress.update(done, total, event.id),
          });
          progress.finish();
          const answers = Object.entries(summary.answers).map(([answer, count]) => `${answer}×${count}`).join(' ');
          const stopped = summary.stopped ? ' (stopped early)' : '';
          const looped = summary.passes > 1 || summary.duplicates > 0 ? ` (${counted(summary.passes, 'pass', 'passes')}, ${counted(summary.duplicates, 'duplicate')})` : '';
          const latency = summary.latency ? `; latency p50 ${summary.latency.p50} ms, p99 ${summary.latency.p99} ms, max ${summary.latency.max} ms` : '';
          io.stdout.write(`replayed ${summary.sent}${looped ? ' sends' : ''} of ${counted(summary.total, 'event')}${looped} in ${(summary.elapsedMs / 1000).toFixed(1)} s${stopped}: ${summary.succeeded} answered 2xx, ${summary.failures} failed; answers: ${answers || 'none'}${latency}\n`);
          for (const failure of summary.failed.slice(0, 20)) {
            io.stdout.write(`  FAILED ${failure.event.id} (${failure.event.type}, accepted ${isoTime(failure.event.createdAt)}${failure.webhookId ? `, ${failure.webhookId}` : ''}): ${failure.error}\n`);
          }
          if (summary.failures > 20) io.stdout.write(`  … and ${summary.failures - 20} more\n`);
          return summary.failures === 0 && !summary.stopped ? 0 : 1;
        } finally {
          progress.finish();
          await poster.close();
        }
      } finally {
        await reader.close();
      }
    },
  });
}

export const replayCommand: CliCommand = createReplayCommand();
