import { z } from 'zod';
import { counted } from '../plural.js';
import type { ReceivedDelivery } from '../receive/verifying-receiver.js';
import { startVerifyingReceiver } from '../receive/verifying-receiver.js';
import { NO_POSITIONALS, byteSizeFlag, defaultApiUrl, defineCommand, endpointSecretHint, integerFlag, secretFlag } from './args.js';
import type { CliCommand } from './command.js';
import type { CliIo } from './io.js';
import { processIo, untilAborted } from './io.js';

const HELP = `Usage: hookline receive --port 9000 --secret whsec_… [options]

A local webhook receiver for trying Hookline out: it verifies every delivery with the SDK
(verifyWebhookSignature, on the raw body bytes) and prints one line per request, the
webhook-id, the event type, the verdict and the body in compact form. It answers 204 to a verified
delivery and 400 to any other (413 past --max-body, 405 to anything but POST). Every path is
accepted; GET /healthz answers 200 and is not printed (wait for it before sending). Ctrl-C stops it.

Options:
  --port N          port to listen on, 0 for any free one (default 9000)
  --host H          address to listen on (default 127.0.0.1)
  --secret whsec_…  the endpoint's secret, from GET /v1/webhook/secret (or WEBHOOK_SECRET)
  --tolerance S     accepted distance of webhook-timestamp from now, in seconds (default 300)
  --max-body SIZE   largest body accepted (default 1mb)
  --full            print whole bodies (default: cut at 160 characters)
  --json            print one JSON object per request instead of a line of text`;

const FLAGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  secret: { type: 'string' },
  tolerance: { type: 'string' },
  'max-body': { type: 'string' },
  full: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

function schema(io: CliIo) {
  return z.object({
    port: integerFlag(0, 65_535, 9000, 'a port'),
    host: z.string().min(1, 'must not be empty: --host 127.0.0.1').default('127.0.0.1'),
    // Read as the verifier reads it: with or without whsec_ and base64 padding.
    secret: secretFlag(io.env.WEBHOOK_SECRET, endpointSecretHint(defaultApiUrl(io.env)), 'verify'),
    tolerance: integerFlag(0, 30 * 24 * 3600, 300, 'seconds'),
    'max-body': byteSizeFlag(1024 * 1024),
    full: z.boolean().optional(),
    json: z.boolean().optional(),
    positionals: NO_POSITIONALS,
  });
}

const BODY_WIDTH = 160;

/** The body as one line of compact JSON (or its text when it is not JSON), and its event type. */
export function describeBody(body: Buffer | null): { type: string | null; compact: string; json: unknown } {
  if (body === null) return { type: null, compact: '(body not kept)', json: null };
  const text = body.toString('utf8');
  try {
    const json: unknown = JSON.parse(text);
    const type = json !== null && typeof json === 'object' && typeof (json as { type?: unknown }).type === 'string' ? (json as { type: string }).type : null;
    return { type, compact: JSON.stringify(json), json };
  } catch {
    return { type: null, compact: JSON.stringify(text), json: text };
  }
}

function formatDelivery(delivery: ReceivedDelivery, full: boolean): string {
  const { type, compact } = describeBody(delivery.body);
  const time = new Date(delivery.at).toISOString().slice(11, 23);
  const verdict = delivery.verified ? 'verified' : `REJECTED (${delivery.reason ?? 'unknown'})`;
  const body = full || compact.length <= BODY_WIDTH ? compact : `${compact.slice(0, BODY_WIDTH - 1)}…`;
  return `${time}  ${delivery.status}  ${delivery.webhookId ?? '(no webhook-id)'}  ${type ?? '-'}  ${verdict}  ${body}`;
}

/** `hookline receive`, talking to `io` (the process by default). */
export function createReceiveCommand(io: CliIo = processIo()): CliCommand {
  return defineCommand(io, {
    name: 'receive',
    help: HELP,
    flags: FLAGS,
    schema: () => schema(io),
    async run(options) {
      let verified = 0;
      let rejected = 0;
      let receiver;
      try {
        receiver = await startVerifyingReceiver({
          host: options.host,
          port: options.port,
          secret: options.secret,
          toleranceSeconds: options.tolerance,
          maxBodyBytes: options['max-body'],
          onDelivery(delivery) {
            if (delivery.verified) verified++;
            else rejected++;
            if (options.json) {
              const { type, json } = describeBody(delivery.body);
              const line = { at: new Date(delivery.at).toISOString(), webhookId: delivery.webhookId, type, verdict: delivery.verified ? 'verified' : 'rejected', status: delivery.status, reason: delivery.reason, body: json };
              io.stdout.write(`${JSON.stringify(line)}\n`);
            } else {
              io.stdout.write(`${formatDelivery(delivery, options.full ?? false)}\n`);
            }
          },
        });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const hint = code === 'EADDRINUSE' ? ': the port is taken; choose another with --port (0 picks a free one)' : '';
        io.stderr.write(`hookline receive: cannot listen on ${options.host}:${options.port} (${(error as Error).message})${hint}\n`);
        return 1;
      }
      io.stderr.write(`hookline receive: listening on ${receiver.url} (any path); verifying deliveries with the given secret. Ctrl-C stops.\n`);
      await untilAborted(io.stopSignal());
      await receiver.close();
      io.stderr.write(`hookline receive: stopped after ${counted(verified + rejected, 'request')}: ${verified} verified, ${rejected} rejected\n`);
      return 0;
    },
  });
}

export const receiveCommand: CliCommand = createReceiveCommand();
