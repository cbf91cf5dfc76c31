import { z } from 'zod';
import { parseDuration } from '../config/duration.js';
import { isoTime } from '../iso-time.js';
import { EVENT_TYPES } from '../sdk/types.js';
import { newSortableId } from '../store/ids.js';
import { EventLogReader } from '../replay/event-log.js';
import { replayEvents } from '../replay/replay-run.js';
import { durationFlag, parseCommandArgs, positiveNumberFlag, printedHelp, secretFlag, urlFlag } from './args.js';
import type { CliCommand } from './command.js';
import { createPoster } from './http-post.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';
import { progressBar } from './progress.js';

const HELP = `Usage: hookline replay --from TIME [--to TIME] [--type T] --target URL --secret whsec_… [options]

Re-sends events stored by Hookline to another target, such as a staging receiver: each one is the
stored envelope byte for byte, signed (Standard Webhooks) with the secret given here under a fresh
webhook-id (rpl_…), oldest first, one at a time and at most --rate a second. Nothing is recorded in
Hookline: the delivery log and the live deliveries are untouched. A summary of the answers ends it.

It reads the events from the node's LMDB directory, read-only (the API does not serve envelopes);
LMDB allows this while the node runs. Run it on the node's machine.

Options:
  --from TIME      events accepted at or after TIME: ISO 8601 (2026-05-01T10:00:00Z) or a
                   duration ago (30m, 2h, 7d)  (required)
  --to TIME        events accepted before TIME (default: now)
  --type T         only events of type T (${EVENT_TYPES.join(', ')})
  --target URL     where to send them (required)
  --secret whsec_… the target's secret (or WEBHOOK_SECRET)
  --rate R         at most R sends a second (default 10)
  --timeout T      per send (default 15s)
  --data-dir DIR   the node's data directory (default HOOKLINE_DATA_DIR, else ./data)
  --project ID     the project whose events to send (default: default)
  --dry-run        list the events that would be sent, send nothing

Exit status: 0 every send answered 2xx (or nothing matched), 1 some did not, 2 bad options.`;

const FLAGS = {
  from: { type: 'string' },
  to: { type: 'string' },
  type: { type: 'string' },
  target: { type: 'string' },
  secret: { type: 'string' },
  rate: { type: 'string' },
  timeout: { type: 'string' },
  'data-dir': { type: 'string' },
  project: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const;

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
      secret: secretFlag(io.env.WEBHOOK_SECRET, "--secret whsec_… (or WEBHOOK_SECRET), the target's secret"),
      rate: positiveNumberFlag(10_000, 10, 'sends a second'),
      timeout: durationFlag(15_000),
      'data-dir': z.string().min(1, 'must name a directory').default(io.env.HOOKLINE_DATA_DIR || './data'),
      project: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a project id (A-Z a-z 0-9 _ -)').default('default'),
      'dry-run': z.boolean().optional(),
      positionals: z.array(z.string()).max(0, 'takes no positional arguments'),
    })
    .refine((options) => options.to === undefined || options.to > options.from, { message: 'must be later than --from', path: ['to'] });
}

/** `hookline replay`, talking to `io` (the process by default). */
export function createReplayCommand(io: CliIo = processIo()): CliCommand {
  return {
    name: 'replay',
    summary: "re-send stored events to another target (e.g. staging), signed with its secret",
    help: HELP,
    async run(args) {
      if (printedHelp(io, args, HELP)) return 0;
      const parsed = parseCommandArgs(io, 'replay', args, FLAGS, schema(io, Date.now()));
      if (!parsed.ok) return parsed.exitCode;
      const options = parsed.value;
      const projectId = options.project;
      let reader: EventLogReader;
      try {
        reader = EventLogReader.open(options['data-dir']);
      } catch (error) {
        io.stderr.write(`hookline replay: ${(error as Error).message}\n`);
        return 1;
      }
      try {
        const events = reader.select({ projectId, from: options.from, ...(options.to !== undefined ? { to: options.to } : {}), ...(options.type ? { type: options.type } : {}) });
        const window = `accepted from ${isoTime(options.from)}${options.to !== undefined ? ` to ${isoTime(options.to)}` : ''}${options.type ? ` of type ${options.type}` : ''}`;
        if (events.length === 0) {
          io.stdout.write(`no stored events of project "${projectId}" ${window} in ${options['data-dir']}: nothing to replay\n`);
          return 0;
        }
        if (options['dry-run']) {
          io.stdout.write(`would replay ${events.length} events of project "${projectId}" ${window} to ${options.target}:\n`);
          for (const event of events) io.stdout.write(`  ${event.id}  ${event.type}  ${isoTime(event.createdAt)}  ${reader.envelope(projectId, event.id)?.length ?? 0} bytes\n`);
          return 0;
        }
        io.stdout.write(`replaying ${events.length} events of project "${projectId}" ${window} to ${options.target}, at most ${options.rate} a second\n`);
        const poster = createPoster(options.target, options.timeout);
        const progress = progressBar(io.stderr, 'replay');
        try {
          const summary = await replayEvents({
            events,
            load: (event) => reader.envelope(projectId, event.id),
            secret: options.secret,
            ratePerSecond: options.rate,
            send: (headers, body) => poster.post(headers, body),
            newWebhookId: () => newSortableId('rpl', Date.now()),
            signal: io.stopSignal(),
            onProgress: (done, total, event) => progress.update(done, total, event.id),
          });
          progress.finish();
          const answers = Object.entries(summary.answers).map(([answer, count]) => `${answer}×${count}`).join(' ');
          const stopped = summary.stopped ? ' (stopped early)' : '';
          io.stdout.write(`replayed ${summary.sent} of ${summary.total} events in ${(summary.elapsedMs / 1000).toFixed(1)} s${stopped}: ${summary.succeeded} answered 2xx, ${summary.failed.length} failed; answers: ${answers || 'none'}\n`);
          for (const failure of summary.failed.slice(0, 20)) {
            io.stdout.write(`  FAILED ${failure.event.id} (${failure.event.type}, accepted ${isoTime(failure.event.createdAt)}): ${failure.error}\n`);
          }
          if (summary.failed.length > 20) io.stdout.write(`  … and ${summary.failed.length - 20} more\n`);
          return summary.failed.length === 0 && !summary.stopped ? 0 : 1;
        } finally {
          progress.finish();
          await poster.close();
        }
      } finally {
        await reader.close();
      }
    },
  };
}

export const replayCommand: CliCommand = createReplayCommand();
