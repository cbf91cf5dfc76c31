import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { HooklineError } from '../errors.js';

/** An API call re-sent to the node that owns the project's partition. */
export interface ForwardedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface ForwardedReply {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** Marks a request that was already forwarded once, so it is never forwarded again. */
export const FORWARDED_HEADER = 'x-hookline-forwarded-by';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Routes API calls to partition owners by NATS request-reply on `<prefix>.<partition>`. Only the
 * owner subscribes to its partitions' subjects, so a request reaches exactly the node that holds
 * the data; with no owner (a partition mid-failover) the caller gets 503 and retries.
 */
export class PartitionRpc {
  private readonly subscriptions = new Map<number, Subscription>();

  constructor(
    private readonly connection: NatsConnection,
    private readonly subjectPrefix: string,
    private readonly handle: (request: ForwardedRequest) => Promise<ForwardedReply>,
  ) {}

  serve(partition: number): void {
    if (this.subscriptions.has(partition)) return;
    const subscription = this.connection.subscribe(`${this.subjectPrefix}.${partition}`, {
      callback: (error, message) => {
        if (error) return;
        const request = JSON.parse(decoder.decode(message.data)) as ForwardedRequest;
        this.handle(request).then(
          (reply) => message.respond(encoder.encode(JSON.stringify(reply))),
          (failure: unknown) => message.respond(encoder.encode(JSON.stringify(internalError(failure)))),
        );
      },
    });
    this.subscriptions.set(partition, subscription);
  }

  unserve(partition: number): void {
    this.subscriptions.get(partition)?.unsubscribe();
    this.subscriptions.delete(partition);
  }

  async forward(partition: number, request: ForwardedRequest, timeoutMs: number): Promise<ForwardedReply> {
    try {
      const reply = await this.connection.request(`${this.subjectPrefix}.${partition}`, encoder.encode(JSON.stringify(request)), { timeout: timeoutMs });
      return JSON.parse(decoder.decode(reply.data)) as ForwardedReply;
    } catch (error) {
      throw new HooklineError('HOOKLINE_ERR_PARTITION_MOVING', `partition ${partition} has no reachable owner right now (a node joined or left); retry shortly`, { cause: error, retryAfterSeconds: 1 });
    }
  }

  close(): void {
    for (const partition of [...this.subscriptions.keys()]) this.unserve(partition);
  }
}

function internalError(failure: unknown): ForwardedReply {
  const error = new HooklineError('HOOKLINE_ERR_INTERNAL', 'the owning node failed to answer; the server log has the details', { cause: failure });
  return { statusCode: error.status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(error.toJSON()) };
}
