import { z } from 'zod';
import { machineGraph, renderMermaid } from '../diagram/index.js';
import { formatInspection, matchPath, pathHighlight } from '../inspect/timeline.js';
import { HooklineClient, NETWORK_ERROR_CODE, isHooklineApiError } from '../sdk/index.js';
import type { DeliveryDetail } from '../sdk/index.js';
import { defaultApiUrl, defineCommand, exampleApiUrl, isHttpUrl, requiredText, urlFlag } from './args.js';
import type { CliCommand } from './command.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';

const HELP = `Usage: hookline inspect DELIVERY_ID [--url URL] [--api-key KEY] [--format text|mermaid|json]

Shows one delivery's history in two tables: its path, every state transition it went through (time,
time since creation, from → to, the machine event, the attempt and its answer); then the edges of
the delivery state machine with how often this delivery took each; and the path as one line.

It asks a running Hookline's API (GET /v1/logs/webhook-deliveries/:id) with the project's key.

Options:
  --url URL       the API (default HOOKLINE_URL, else http://HOOKLINE_HOST:HOOKLINE_PORT,
                  else http://127.0.0.1:8080)
  --api-key KEY   the project's API key (default HOOKLINE_API_KEY)
  --format F      text (default); mermaid: the machine's diagram with the states this delivery
                  entered filled and each taken edge marked ×n; json: the delivery and its path`;

const FLAGS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  format: { type: 'string' },
} as const;

function schema(io: CliIo) {
  return z.object({
    url: z
      .string()
      .optional()
      .transform((url, context) => {
        if (url !== undefined) return url;
        // Without --url the address is the environment's, so a bad one names HOOKLINE_URL, not --url.
        if (io.env.HOOKLINE_URL && !isHttpUrl(io.env.HOOKLINE_URL)) {
          context.addIssue({ code: 'custom', message: `HOOKLINE_URL=${io.env.HOOKLINE_URL} must be an absolute http:// or https:// URL: set it like ${exampleApiUrl(io.env)}, or pass --url`, params: { namesItsSetting: true } });
          return z.NEVER;
        }
        return defaultApiUrl(io.env);
      })
      .pipe(urlFlag(`--url ${exampleApiUrl(io.env)}`)),
    'api-key': z.string().optional().transform((key) => key ?? io.env.HOOKLINE_API_KEY).pipe(requiredText("--api-key KEY (or HOOKLINE_API_KEY), the delivery's project key")),
    format: z.enum(['text', 'mermaid', 'json'], { error: 'must be text, mermaid or json' }).default('text'),
    positionals: z
      .array(z.string())
      .length(1, 'takes one DELIVERY_ID (dlv_…), e.g. from GET /v1/logs/webhook-deliveries')
      .refine(([id]) => /^dlv_[A-Za-z0-9_-]{1,100}$/.test(id ?? ''), 'the DELIVERY_ID must look like dlv_… (copy it from the delivery log)'),
  });
}

/** `hookline inspect`, talking to `io` (the process by default). */
export function createInspectCommand(io: CliIo = processIo()): CliCommand {
  return defineCommand(io, {
    name: 'inspect',
    help: HELP,
    flags: FLAGS,
    schema: () => schema(io),
    async run({ url, format, positionals, 'api-key': apiKey }) {
      const id = positionals[0]!;
      const client = new HooklineClient({ baseUrl: url, apiKey });
      let detail: DeliveryDetail;
      try {
        detail = await client.getDelivery(id);
      } catch (error) {
        if (isHooklineApiError(error) && error.code !== NETWORK_ERROR_CODE) {
          const hint = error.status === 401 ? ': check --api-key (or HOOKLINE_API_KEY)' : error.status === 404 ? ': check the id, and that the key belongs to its project' : '';
          io.stderr.write(`hookline inspect: ${url} answered ${error.status} ${error.code}: ${error.message}${hint}\n`);
        } else {
          io.stderr.write(`hookline inspect: cannot reach Hookline at ${url} (${(error as Error).message}): is it running? Set --url or HOOKLINE_URL\n`);
        }
        return 1;
      }
      const graph = machineGraph('delivery');
      if (format === 'json') {
        const path = matchPath(graph, detail).map((step) => ({ ...step.transition, edge: step.edge ? { from: step.edge.from, to: step.edge.to, event: step.edge.event } : null, known: step.known }));
        io.stdout.write(`${JSON.stringify({ delivery: detail, path }, null, 2)}\n`);
      } else if (format === 'mermaid') {
        io.stdout.write(renderMermaid(graph, pathHighlight(matchPath(graph, detail))));
      } else {
        io.stdout.write(formatInspection(detail, graph));
      }
      return 0;
    },
  });
}

export const inspectCommand: CliCommand = createInspectCommand();
