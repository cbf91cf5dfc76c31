import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { isHooklineApiError } from '../sdk/errors.js';
import { EVENT_ID_CONFLICT_CODE, publishEvent } from '../sdk/nats.js';
import { ingestSubject } from '../sdk/partition.js';
import { EVENT_TYPES } from '../sdk/types.js';
import { newEventId } from '../store/ids.js';
import type { EventVerdict } from '../transport/verdict.js';
import { decodeVerdict, verdictSubject, verdictSubjectPrefix } from '../transport/verdict.js';
import { maskedNatsUrl } from '../transport/nats-access.js';
import type { NatsAccess } from '../transport/nats-access.js';
import { connectNats } from '../transport/nats-connection.js';
import { diagnoseUnansweredPublish, isUnansweredPublish, type UnansweredPublish } from './unanswered-publish.js';
import { NO_POSITIONALS, defineCommand, durationFlag, integerFlag } from './args.js';
import type { CliCommand } from './command.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';

/** Exit status when JetStream stored the event but Hookline's verdict did not come within --wait. */
export const NO_VERDICT_EXIT = 3;

const HELP = `Usage: hookline publish --project P --type T --data '{...}' [--id evt_…] [--wait 5s] [options]

Publishes the event on JetStream subject <prefix>.<project> with Nats-Msg-Id set to its id, then waits
for Hookline's verdict on it (published on _HOOKLINE.verdicts.<prefix>.<id>, see the README's NATS
mode): accepted (with its delivery), or rejected with the reason, such as a project that does not
exist. A Hookline started with HOOKLINE_NATS_URL consumes the event.
  --project     project id (the one named by your API key; "default" for HOOKLINE_API_KEY)
  --type        ${EVENT_TYPES.join(' | ')}
  --data        the event's data, a JSON object
  --id          event id (generated when omitted); the same event again under it is de-duplicated,
                another body under it is rejected (event_id_conflict)
  --wait T      how long to wait for the verdict (default 5s; 0 prints the stream sequence only)
  --url         NATS server, or comma-separated seeds (default $HOOKLINE_NATS_URL or nats://127.0.0.1:4222);
                credentials and TLS come from HOOKLINE_NATS_USER/_PASSWORD, _TOKEN, _NKEY, _CREDS,
                _TLS_CA, _TLS_CERT and _TLS_KEY, as for hookline serve
  --prefix      subject prefix (default $HOOKLINE_NATS_SUBJECT_PREFIX or hookline.events)
  --partitions  publishing to a cluster: its partition count (default $HOOKLINE_PARTITIONS when
                HOOKLINE_CLUSTER=1); the subject becomes <prefix>.<partition>.<project>. Without
                it a cluster takes the event too, passing it on to its partition (one hop more)

While NATS elects a leader (a server was lost or restarted) it says so and publishes again, under
the same id, for up to 20 s.

Exit status: 0 accepted (or stored, with --wait 0), 1 rejected by Hookline or NATS unreachable,
2 bad options, ${NO_VERDICT_EXIT} stored in JetStream but no verdict within --wait.`;

const FLAGS = {
  project: { type: 'string' },
  type: { type: 'string' },
  data: { type: 'string' },
  id: { type: 'string' },
  wait: { type: 'string' },
  url: { type: 'string' },
  prefix: { type: 'string' },
  partitions: { type: 'string' },
} as const;

function schema(io: CliIo) {
  return z.object({
    project: z.string({ error: 'is required: --project default (the project id)' }).regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a project id (1-64 of A-Z a-z 0-9 _ -)'),
    type: z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }),
    data: z.string({ error: `is required: a JSON object, e.g. '{"hello":"world"}'` }).transform((text, context) => {
      try {
        const value: unknown = JSON.parse(text);
        if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
      } catch {
        // reported below
      }
      context.addIssue({ code: 'custom', message: `must be a JSON object, e.g. '{"hello":"world"}'` });
      return z.NEVER;
    }),
    id: z.string().regex(/^evt_[A-Za-z0-9_-]{1,100}$/, 'must be evt_ followed by 1-100 of A-Z a-z 0-9 _ -').optional(),
    wait: durationFlag(5_000, 0),
    url: z.string().min(1).default(io.env.HOOKLINE_NATS_URL || 'nats://127.0.0.1:4222'),
    prefix: z.string().min(1).default(io.env.HOOKLINE_NATS_SUBJECT_PREFIX || 'hookline.events'),
    partitions: z
      .string()
      .optional()
      .transform((text) => text ?? (io.env.HOOKLINE_CLUSTER === '1' ? (io.env.HOOKLINE_PARTITIONS ?? '64') : undefined))
      .pipe(integerFlag(1, 1024, 0, "the cluster's HOOKLINE_PARTITIONS"))
      .transform((partitions) => partitions || undefined),
    positionals: NO_POSITIONALS,
  });
}

/**
 * The first verdict published on `subject`. Subscribed (and the subscription flushed to the server)
 * before the event is published, so a verdict that comes at once is not missed.
 */
interface VerdictListener {
  verdict(timeoutMs: number): Promise<EventVerdict | null>;
  close(): void;
}

async function subscribeVerdict(connection: NatsConnection, subject: string): Promise<VerdictListener> {
  let settle: (verdict: EventVerdict) => void = () => {};
  let first: EventVerdict | null = null;
  const subscription = connection.subscribe(subject, {
    callback: (error, message) => {
      const verdict = error ? null : decodeVerdict(message.data);
      if (verdict === null || first !== null) return;
      first = verdict;
      settle(verdict);
    },
  });
  await connection.flush();
  return {
    verdict(timeoutMs) {
      if (first !== null) return Promise.resolve(first);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(null), timeoutMs);
        settle = (verdict) => {
          clearTimeout(timer);
          resolve(verdict);
        };
      });
    },
    close: () => subscription.unsubscribe(),
  };
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** What Hookline said, as a line for a person, and the exit status it means. */
export function describeVerdict(verdict: EventVerdict): { line: string; exitCode: number } {
  if (verdict.verdict === 'accepted') {
    const outcome = verdict.duplicate ? 'a repeat of an event already accepted; nothing new was stored' : verdict.deliveryId ? `delivery ${verdict.deliveryId} made` : 'stored; it matches no webhook, so nothing is delivered';
    return { line: `accepted by Hookline: ${verdict.id} in project "${verdict.projectId}" (${outcome})`, exitCode: 0 };
  }
  const why =
    verdict.reason === 'unknown_project'
      ? `project "${verdict.projectId}" does not exist; create it (hookline keys create --project ${verdict.projectId}, or POST /admin/v1/projects) or check --project`
      : verdict.message;
  return { line: `rejected by Hookline (${verdict.reason}): ${why}`, exitCode: 1 };
}

/** The same NATS settings `hookline serve` reads, for the URL `--url` gives (secrets stay in the environment). */
function publisherAccess(io: CliIo, natsUrl: string): NatsAccess {
  const value = (name: string) => io.env[name] || null;
  return {
    natsUrl,
    natsUser: value('HOOKLINE_NATS_USER'),
    natsPassword: value('HOOKLINE_NATS_PASSWORD'),
    natsToken: value('HOOKLINE_NATS_TOKEN'),
    natsNkeyFile: value('HOOKLINE_NATS_NKEY'),
    natsCredsFile: value('HOOKLINE_NATS_CREDS'),
    natsTlsCa: value('HOOKLINE_NATS_TLS_CA'),
    natsTlsCert: value('HOOKLINE_NATS_TLS_CERT'),
    natsTlsKey: value('HOOKLINE_NATS_TLS_KEY'),
  };
}

/** How long a publish is tried again while NATS elects a leader, and the pause between tries. */
const ELECTION_WAIT_MS = 20_000;
const ELECTION_PAUSE_MS = 500;

function electionLine(why: Extract<UnansweredPublish, { kind: 'stream_electing' | 'api_electing' }>): string {
  return why.kind === 'stream_electing' ? `NATS is electing a leader for stream ${why.stream}` : 'NATS is electing its JetStream leader (the JetStream API does not answer)';
}

/** The line for a publish nobody answered, by why: the setting or the state to fix, and how. */
function unansweredLine(why: UnansweredPublish, { url, prefix, subject, id }: { url: string; prefix: string; subject: string; id: string }): string {
  switch (why.kind) {
    case 'no_jetstream':
      return `the NATS server at --url ${maskedNatsUrl(url)} runs without JetStream; start it with -js, or point --url (HOOKLINE_NATS_URL) at Hookline's NATS`;
    case 'no_stream':
      return `no JetStream stream takes ${subject}: is a Hookline running with HOOKLINE_NATS_URL=${maskedNatsUrl(url)} and HOOKLINE_NATS_SUBJECT_PREFIX=${prefix} (it creates the stream)? Check --prefix`;
    default:
      return `${electionLine(why)}, and it has not finished within ${seconds(ELECTION_WAIT_MS)} (too few of its servers may be up): the event was not stored; publish it again, with the same --id ${id}, once the NATS cluster has recovered`;
  }
}

/** `hookline publish`, talking to `io` (the process by default). */
export function createPublishCommand(io: CliIo = processIo()): CliCommand {
  return defineCommand(io, {
    name: 'publish',
    help: HELP,
    flags: FLAGS,
    schema: () => schema(io),
    async run(flags) {
      let connection: NatsConnection;
      try {
        connection = await connectNats(publisherAccess(io, flags.url), { timeout: 3000, reconnect: false });
      } catch (error) {
        io.stderr.write(`hookline publish: cannot reach NATS: ${(error as Error).message}\n`);
        return 1;
      }
      // Known before publishing, so that the verdict's subject can be listened on first.
      const id = flags.id ?? newEventId(Date.now());
      const subject = ingestSubject(flags.prefix, flags.project, flags.partitions);
      let listener: VerdictListener | null = null;
      try {
        listener = flags.wait > 0 ? await subscribeVerdict(connection, verdictSubject(verdictSubjectPrefix(flags.prefix), id)!) : null;
        let result;
        let electing = false;
        const electionDeadline = Date.now() + ELECTION_WAIT_MS;
        for (;;) {
          try {
            result = await publishEvent(connection, flags.project, { type: flags.type, data: flags.data, id }, { subjectPrefix: flags.prefix, ...(flags.partitions ? { partitions: flags.partitions } : {}) });
            break;
          } catch (error) {
            if (isHooklineApiError(error) && error.code === EVENT_ID_CONFLICT_CODE) {
              io.stderr.write(`hookline publish: rejected (${error.code}): ${error.message}\n`);
              return 1;
            }
            if (!isUnansweredPublish(error)) {
              io.stderr.write(`hookline publish: ${(error as Error).message}; is a Hookline with HOOKLINE_NATS_URL running (it creates the stream)?\n`);
              return 1;
            }
            const why = await diagnoseUnansweredPublish(connection, subject);
            const stillElecting = why.kind === 'stream_electing' || why.kind === 'api_electing';
            if (stillElecting && Date.now() < electionDeadline) {
              // Said once; the same id again is safe (JetStream drops a repeat within its duplicate window).
              if (!electing) io.stderr.write(`hookline publish: ${electionLine(why)} (a NATS server was lost or restarted); publishing again once it has one\n`);
              electing = true;
              await new Promise((resolve) => setTimeout(resolve, ELECTION_PAUSE_MS));
              continue;
            }
            io.stderr.write(`hookline publish: ${unansweredLine(why, { url: flags.url, prefix: flags.prefix, subject, id })}\n`);
            return 1;
          }
        }
        // A publish that timed out during the election may have been stored: then this one is its repeat.
        if (result.duplicate && !electing) {
          // JetStream dropped it, so Hookline never sees it and sends no verdict: the first publish's stands.
          io.stdout.write(`published ${id} on ${subject}: a repeat of the same event within JetStream's duplicate window, dropped by JetStream (stream seq ${result.seq} is the first); Hookline judged the first\n`);
          return 0;
        }
        io.stdout.write(`published ${id} on ${subject} (stream seq ${result.seq})\n`);
        if (!listener) return 0;
        const verdict = await listener.verdict(flags.wait);
        if (verdict === null) {
          io.stderr.write(
            `hookline publish: no verdict from Hookline within ${seconds(flags.wait)}: the event is stored in JetStream, but no Hookline consuming it answered. Is one running with HOOKLINE_NATS_URL=${maskedNatsUrl(flags.url)} and HOOKLINE_NATS_SUBJECT_PREFIX=${flags.prefix}? It will judge the event when it consumes the stream (a rejection goes to GET /admin/v1/rejected-events)\n`,
          );
          return NO_VERDICT_EXIT;
        }
        const { line, exitCode } = describeVerdict(verdict);
        (exitCode === 0 ? io.stdout : io.stderr).write(exitCode === 0 ? `${line}\n` : `hookline publish: ${line}\n`);
        return exitCode;
      } finally {
        listener?.close();
        await connection.close();
      }
    },
  });
}

export const publishCommand: CliCommand = createPublishCommand();
