import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { HooklineError, loggedError, withRequestId } from '../errors.js';
import { requestIdGenerator } from '../http/request-ids.js';

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
 * the data; with no owner (a partition mid-failover or mid-handover) the call waits for the next
 * one, up to a bound (`forward`), and only then does the caller get 503 `partition_moving`.
 */
export class PartitionRpc {
  private readonly subscriptions = new Map<number, Subscription>();
  private readonly nextFailureId = requestIdGenerator();

  constructor(
    private readonly connection: NatsConnection,
    private readonly subjectPrefix: string,
    private readonly handle: (request: ForwardedRequest) => Promise<ForwardedReply>,
    private readonly nodeId: string,
    private readonly logger: Pick<Logger, 'error'>,
  ) {}

  serve(partition: number): void {
    if (this.subscriptions.has(partition)) return;
    const subscription = this.connection.subscribe(`${this.subjectPrefix}.${partition}`, {
      callback: (error, message) => {
        if (error) return;
        let request: ForwardedRequest;
        try {
          request = JSON.parse(decoder.decode(message.data)) as ForwardedRequest;
        } catch (failure) {
          this.respond(message, this.failed(failure, 'a forwarded API call could not be read'));
          return;
        }
        this.handle(request).then(
          (reply) => this.respond(message, reply),
          (failure: unknown) => this.respond(message, this.failed(failure, `a forwarded API call failed on this node (${request.method} ${request.url})`)),
        );
      },
    });
    this.subscriptions.set(partition, subscription);
  }

  /** The caller's 500, naming the line logged here: the caller's node has no log of it. */
  private failed(failure: unknown, what: string): ForwardedReply {
    return this.answeredHere(new HooklineError('HOOKLINE_ERR_INTERNAL', 'internal error', { cause: failure }), what);
  }

  /** `error` logged here under a reqId of its own, which the caller's answer names (`withRequestId`). */
  private answeredHere(error: HooklineError, what: string): ForwardedReply {
    const reqId = this.nextFailureId();
    this.logger.error({ err: loggedError(error), reqId }, what);
    return errorReply(withRequestId(error, reqId, `the log of node ${this.nodeId} (the partition's owner)`));
  }

  /**
   * Sends the answer back. NATS refuses a message over its max_payload (a page of large stored
   * events can be), and a refused reply must not end the process: the caller gets a coded error.
   */
  private respond(message: Msg, reply: ForwardedReply): void {
    const payload = encoder.encode(JSON.stringify(reply));
    const maxPayload = this.connection.info?.max_payload;
    if (maxPayload !== undefined && payload.byteLength > maxPayload) {
      const tooLarge = new HooklineError('HOOKLINE_ERR_ANSWER_TOO_LARGE', `the owning node's answer (${payload.byteLength} bytes) is larger than NATS max_payload (${maxPayload} bytes), which carries it to this node; ask for a smaller page (limit), call the owning node, or raise max_payload`);
      this.respondOrDrop(message, encoder.encode(JSON.stringify(this.answeredHere(tooLarge, 'a forwarded API call\'s answer is larger than NATS max_payload'))));
      return;
    }
    this.respondOrDrop(message, payload);
  }

  /** A reply that still cannot be sent (the connection closed meanwhile) leaves the caller to time out and retry. */
  private respondOrDrop(message: Msg, payload: Uint8Array): void {
    try {
      message.respond(payload);
    } catch {
      // The caller's request times out and answers partition_moving, which it retries.
    }
  }

  unserve(partition: number): void {
    const subscription = this.subscriptions.get(partition);
    this.subscriptions.delete(partition);
    // Drained, not dropped: a call already on its way here is still answered (503 partition_moving,
    // which the caller sends again to the next owner). Unsubscribed, it was lost, and its caller
    // answered 503 after its whole timeout.
    subscription?.drain().catch(() => {});
  }

  /**
   * Sends the call to the partition's owner and returns its answer. While the partition has no
   * owner (nobody serves its subject: a node is taking it over or restoring it), or the owner
   * answers 503 `partition_moving` or `shutting_down` (it is handing the partition over; such an
   * answer changed nothing), the call is sent again after a growing pause, until `waitMs` has
   * passed: a handover shorter than that is not seen by the client. A call that got no answer
   * within `timeoutMs` is not sent again: the owner may have made it.
   * @throws {HooklineError} `HOOKLINE_ERR_PARTITION_MOVING` when there is still no owner after `waitMs`, or no answer came
   */
  async forward(partition: number, request: ForwardedRequest, timeoutMs: number, waitMs = 0): Promise<ForwardedReply> {
    const payload = this.payloadOf(request);
    const deadline = Date.now() + waitMs;
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.send(partition, payload, timeoutMs);
      if (outcome.kind === 'answered' && !isHandoverAnswer(outcome.reply)) return outcome.reply;
      if (outcome.kind === 'unanswered' || Date.now() >= deadline) {
        if (outcome.kind === 'answered') return outcome.reply;
        throw outcome.error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(FORWARD_PAUSE_MS * 2 ** attempt, FORWARD_MAX_PAUSE_MS, Math.max(0, deadline - Date.now()))));
    }
  }

  private payloadOf(request: ForwardedRequest): Uint8Array {
    const payload = encoder.encode(JSON.stringify(request));
    // NATS refuses a larger message outright; sent anyway, it would look like a partition without an
    // owner and be retried forever. A batch (up to HOOKLINE_MAX_BATCH_BODY) can be this large.
    const maxPayload = this.connection.info?.max_payload;
    if (maxPayload !== undefined && payload.byteLength > maxPayload) {
      throw new HooklineError('HOOKLINE_ERR_PAYLOAD_TOO_LARGE', `this node would forward the call to the project's owner over NATS, whose max_payload (${maxPayload} bytes) is below the ${payload.byteLength} bytes of the call; send smaller batches, send them to the owning node, or raise max_payload`);
    }
    return payload;
  }

  private async send(partition: number, payload: Uint8Array, timeoutMs: number): Promise<ForwardOutcome> {
    try {
      const reply = await this.connection.request(`${this.subjectPrefix}.${partition}`, payload, { timeout: timeoutMs });
      return { kind: 'answered', reply: JSON.parse(decoder.decode(reply.data)) as ForwardedReply };
    } catch (error) {
      const moving = new HooklineError('HOOKLINE_ERR_PARTITION_MOVING', `partition ${partition} has no reachable owner right now (a node joined or left); retry shortly`, { cause: error, retryAfterSeconds: 1 });
      return { kind: isNoResponders(error) ? 'no_owner' : 'unanswered', error: moving };
    }
  }

  close(): void {
    for (const partition of [...this.subscriptions.keys()]) this.unserve(partition);
  }
}

/** First pause before a call whose partition had no owner is sent again; it doubles up to the most. */
const FORWARD_PAUSE_MS = 25;
const FORWARD_MAX_PAUSE_MS = 250;

type ForwardOutcome =
  | { kind: 'answered'; reply: ForwardedReply }
  /** Nobody serves the partition's subject: the call reached no node. */
  | { kind: 'no_owner'; error: HooklineError }
  /** Sent, but no answer came in time (or the connection failed): it may have been made. */
  | { kind: 'unanswered'; error: HooklineError };

/** NATS answered that nobody listens on the subject (`RequestError` caused by `NoResponders`). */
function isNoResponders(error: unknown): boolean {
  const cause = (error as { cause?: { name?: unknown } } | null)?.cause;
  return cause?.name === 'NoResponders' || /no responders/i.test(String((error as Error | null)?.message));
}

/** The owner's 503 for a partition it is handing over, or no longer has: nothing was changed, and the next owner will answer. */
function isHandoverAnswer(reply: ForwardedReply): boolean {
  if (reply.statusCode !== 503) return false;
  try {
    const code = (JSON.parse(reply.body) as { error?: { code?: unknown } }).error?.code;
    return code === 'partition_moving' || code === 'shutting_down';
  } catch {
    return false;
  }
}

function errorReply(error: HooklineError): ForwardedReply {
  return { statusCode: error.status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(error.toJSON()) };
}
