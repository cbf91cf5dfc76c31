import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import { verifyWebhookSignature } from '../../src/sdk/index.js';

/** The envelope Hookline POSTs (DESIGN.md, "Envelope"). */
export interface Envelope {
  version: string;
  id: string;
  type: string;
  metadata: Record<string, string>;
  data: Record<string, unknown>;
  timestamp: string;
}

export interface ReceivedDelivery {
  /** The request target as it arrived (path and query). */
  url: string;
  headers: IncomingHttpHeaders;
  webhookId: string;
  webhookTimestamp: string;
  signature: string;
  /** The raw body bytes as received. */
  body: Buffer;
  envelope: Envelope;
  /** Whether the signature verified with `receiver.secret` at arrival (false while no secret is set). */
  verified: boolean;
  receivedAt: number;
}

/** How the receiver answers one request: a status (and body, headers), or never (`hang`). */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

export interface Receiver {
  readonly url: string;
  readonly received: ReceivedDelivery[];
  /** The secret deliveries are verified with; set it after configuring the webhook. */
  secret: string | null;
  /** Decides each answer (possibly later, as a promise); `index` counts requests from 0. @default always 204 */
  respond: (delivery: ReceivedDelivery, index: number) => Reply | Promise<Reply>;
  /** Requests carrying this `webhook-id`, in arrival order. */
  byWebhookId(webhookId: string): ReceivedDelivery[];
  close(): Promise<void>;
}

const header = (headers: IncomingHttpHeaders, name: string): string => {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
};

/**
 * A real node:http receiver on 127.0.0.1, port 0. It records every request with its raw body and
 * verifies the signature with our SDK's `verifyWebhookSignature`. Closed when the test finishes
 * (pass `autoClose: false` to manage it yourself).
 */
export async function startReceiver(options: { respond?: Receiver['respond']; autoClose?: boolean } = {}): Promise<Receiver> {
  const server = createServer();
  const received: ReceivedDelivery[] = [];
  const receiver: Receiver = {
    url: '',
    received,
    secret: null,
    respond: options.respond ?? (() => ({ status: 204 })),
    byWebhookId: (webhookId) => received.filter((delivery) => delivery.webhookId === webhookId),
    close: async () => {
      server.closeAllConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('request', (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const webhookId = header(req.headers, 'webhook-id');
        const webhookTimestamp = header(req.headers, 'webhook-timestamp');
        const signature = header(req.headers, 'webhook-signature');
        const secret = receiver.secret;
        const verified = secret !== null && (await verifyWebhookSignature({ id: webhookId, timestamp: webhookTimestamp, signature, body, secret }));
        let envelope: Envelope;
        try {
          envelope = JSON.parse(body.toString('utf8')) as Envelope;
        } catch {
          envelope = { version: '', id: '', type: '', metadata: {}, data: {}, timestamp: '' };
        }
        const delivery: ReceivedDelivery = { url: req.url ?? '', headers: req.headers, webhookId, webhookTimestamp, signature, body, envelope, verified, receivedAt: Date.now() };
        const index = received.push(delivery) - 1;
        const reply = await receiver.respond(delivery, index);
        if (reply === 'hang' || res.destroyed) return;
        res.writeHead(reply.status, reply.headers).end(reply.body ?? '');
      })();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  Object.assign(receiver, { url: `http://127.0.0.1:${port}/hooks` });
  if (options.autoClose !== false) onTestFinished(() => receiver.close());
  return receiver;
}
