import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { z } from 'zod';
import { publishEvent } from '../sdk/nats.js';
import { ingestSubject } from '../sdk/partition.js';
import { EVENT_TYPES } from '../sdk/types.js';
import type { CliCommand } from './command.js';
import { usageError, wantsHelp } from './command.js';

const flagsSchema = z.object({
  project: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '--project must be a project id (letters, digits, _ and -)'),
  type: z.enum(EVENT_TYPES, { error: `--type must be one of ${EVENT_TYPES.join(', ')}` }),
  data: z.string().transform((text, context) => {
    try {
      const value: unknown = JSON.parse(text);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // reported below
    }
    context.addIssue({ code: 'custom', message: `--data must be a JSON object, e.g. '{"hello":"world"}'` });
    return z.NEVER;
  }),
  id: z.string().regex(/^evt_[A-Za-z0-9_-]{1,100}$/, '--id must be evt_ followed by 1-100 of A-Z a-z 0-9 _ -').optional(),
  url: z.string().min(1),
  prefix: z.string().min(1),
  partitions: z.coerce.number().int().min(1, '--partitions must be the cluster\'s HOOKLINE_PARTITIONS (a positive integer)').max(1024).optional(),
});

export const publishCommand: CliCommand = {
  name: 'publish',
  summary: 'publish one event to Hookline over NATS JetStream (for trying the NATS path by hand)',
  help: `Usage: hookline publish --project P --type T --data '{...}' [--id evt_…] [--url nats://127.0.0.1:4222] [--prefix hookline.events]

Publishes the event on JetStream subject <prefix>.<project> with Nats-Msg-Id set to its id, and prints
the id and stream sequence. A Hookline started with HOOKLINE_NATS_URL consumes it.
  --project   project id (the one named by your API key; "default" for HOOKLINE_API_KEY)
  --type      ${EVENT_TYPES.join(' | ')}
  --data      the event's data, a JSON object
  --id        event id (generated when omitted); publishing the same id again is de-duplicated
  --url       NATS server (default $HOOKLINE_NATS_URL or nats://127.0.0.1:4222)
  --prefix    subject prefix (default $HOOKLINE_NATS_SUBJECT_PREFIX or hookline.events)
  --partitions  publishing to a cluster: its partition count (default $HOOKLINE_PARTITIONS when
                HOOKLINE_CLUSTER=1); the subject becomes <prefix>.<partition>.<project>`,
  async run(args) {
    if (wantsHelp(args)) {
      process.stdout.write(`${this.help}\n`);
      return 0;
    }
    let values: Record<string, string | undefined>;
    try {
      values = parseArgs({ args, options: { project: { type: 'string' }, type: { type: 'string' }, data: { type: 'string' }, id: { type: 'string' }, url: { type: 'string' }, prefix: { type: 'string' }, partitions: { type: 'string' } } }).values;
    } catch (error) {
      return usageError(this, (error as Error).message);
    }
    const parsed = flagsSchema.safeParse({
      ...values,
      url: values.url ?? process.env.HOOKLINE_NATS_URL ?? 'nats://127.0.0.1:4222',
      prefix: values.prefix ?? process.env.HOOKLINE_NATS_SUBJECT_PREFIX ?? 'hookline.events',
      partitions: values.partitions ?? (process.env.HOOKLINE_CLUSTER === '1' ? (process.env.HOOKLINE_PARTITIONS ?? '64') : undefined),
    });
    if (!parsed.success) return usageError(this, parsed.error.issues.map((issue) => (issue.path.length ? `${issue.message} (${issue.path.join('.')})` : issue.message)).join('; '));
    const flags = parsed.data;
    let connection;
    try {
      connection = await connect({ servers: flags.url, timeout: 3000 });
    } catch (error) {
      process.stderr.write(`hookline publish: cannot reach NATS at ${flags.url} (${(error as Error).message}); start nats-server -js or pass --url\n`);
      return 1;
    }
    try {
      const result = await publishEvent(connection, flags.project, { type: flags.type, data: flags.data, ...(flags.id ? { id: flags.id } : {}) }, { subjectPrefix: flags.prefix, ...(flags.partitions ? { partitions: flags.partitions } : {}) });
      process.stdout.write(`published ${result.id} on ${ingestSubject(flags.prefix, flags.project, flags.partitions)} (stream seq ${result.seq}${result.duplicate ? ', duplicate: dropped by JetStream' : ''})\n`);
      return 0;
    } catch (error) {
      process.stderr.write(`hookline publish: ${(error as Error).message}; is a Hookline with HOOKLINE_NATS_URL running (it creates the stream)?\n`);
      return 1;
    } finally {
      await connection.close();
    }
  },
};
