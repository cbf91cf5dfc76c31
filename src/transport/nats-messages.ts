import { traceIngest } from '../tracing/ingest-trace.js';
import type { Tracing } from '../tracing/tracing.js';
import type { JsMsg } from '@nats-io/jetstream';
import type { HooklineError } from '../errors.js';
import { isHooklineError } from '../errors.js';
import { inputProblems, problemsLine } from '../input-messages.js';
import { settled } from '../settled.js';
import { eventInputSchema } from './event-input.js';
import type { EventInput } from './event-input.js';
import { redeliveryDelay } from './redelivery-delay.js';
import type { EventSink, Rejection } from './types.js';
import type { EventVerdict } from './verdict.js';

/** Bytes of a rejected payload kept for diagnosis. */
const REJECTED_PAYLOAD_BYTES = 1024;
const textDecoder = new TextDecoder();

/** What one message asks of the sink, decided from the message alone. */
type Decision =
  | { kind: 'ingest'; message: JsMsg; projectId: string; eventId: string | undefined; input: EventInput }
  | { kind: 'reject'; message: JsMsg; eventId: string | undefined; rejection: Rejection };

/** A message whose rejection is being recorded: terminated once it is, nak'ed if it cannot be. */
interface Rejecting {
  message: JsMsg;
  eventId: string | undefined;
  rejection: Rejection;
  /** Whether the rejection reached the log; never rejects, since it is awaited only after the ingests. */
  recorded: Promise<boolean>;
}

/** What becomes of a message refused `overloaded`: set aside (acked), or nak'ed after `delayMs` (@default its own growing delay). */
export type OverloadAnswer = { kind: 'set_aside' } | { kind: 'nak'; delayMs?: number };

/**
 * Where a batch's messages of a project over HOOKLINE_MAX_WAITING_PER_PROJECT go (nats-parking.ts).
 * A message set aside is held in the stream for its project's own consumer: it is acked here, and
 * that consumer ingests it once the project has room.
 */
export interface OverloadRoute {
  /**
   * Asked before a message is read: null to ingest it, else whether it is set aside unread (its
   * project's events already wait in the stream behind it). False: it is ingested after all.
   */
  setAside(projectId: string, message: JsMsg): Promise<boolean> | null;
  /** The message was refused `overloaded`. */
  overloaded(projectId: string, message: JsMsg): Promise<OverloadAnswer>;
}

export interface NatsMessagesOptions {
  /** Events for project P come on `<subjectPrefix>.P`. */
  subjectPrefix: string;
  /** Redelivery delay after a first transient failure; later ones double (redelivery-delay.ts). */
  nakDelayMs: number;
  random: () => number;
  /** Publishes a verdict, best effort (verdict.ts). */
  sendVerdict(verdict: EventVerdict): void;
  /** Each ingest is a span (one message, one event); null: no tracing. */
  tracing: Tracing | null;
  /**
   * The sink passes events on (a cluster's router of unpartitioned events): each message's
   * `traceparent` header goes with its event as is, for the node that stores it.
   */
  passesEventsOn: boolean;
}

/**
 * The ack / nak / term mapping of JetStream messages, shared by a transport's consumer and its
 * projects' parked-event consumers (nats-parking.ts). A message is acked only after its event (and
 * delivery) is committed to LMDB; one that can never be accepted (bad JSON, failed validation, an
 * unknown project, an id reused with another body) is recorded in the rejected-events log and then
 * terminated; a transient failure is nak'ed with a growing delay so JetStream redelivers it; one
 * refused `overloaded` goes where the batch's `OverloadRoute` says.
 *
 * Every ingest and every rejection record of a batch is started in one turn (one LMDB commit for
 * all of them), then each message is settled on its own outcome. A permanent ingest failure is
 * recorded as a rejection in a second round, together with the batch's others.
 */
export class NatsMessages {
  constructor(private readonly options: NatsMessagesOptions) {}

  /** The project a message is for: its subject's last token. */
  projectOf(message: JsMsg): string {
    return message.subject.slice(this.options.subjectPrefix.length + 1);
  }

  async handleBatch(sink: EventSink, batch: JsMsg[], route: OverloadRoute | null): Promise<void> {
    const setAside: Array<Promise<void>> = [];
    const decisions: Decision[] = [];
    for (const message of batch) {
      const parked = route?.setAside(this.projectOf(message), message);
      if (parked) setAside.push(parked.then((held) => (held ? message.ack() : this.handleBatch(sink, [message], null)), () => this.nak(message)));
      else decisions.push(this.decide(message));
    }
    const ingesting = decisions.filter((decision) => decision.kind === 'ingest');
    const rejecting: Rejecting[] = [];
    for (const decision of decisions) if (decision.kind === 'reject') rejecting.push(this.record(sink, decision));
    const ingested = await Promise.allSettled(ingesting.map((decision) => settled(() => this.ingest(sink, decision))));
    const refused: Rejecting[] = [];
    ingested.forEach((outcome, index) => {
      const { message, projectId, eventId } = ingesting[index]!;
      if (outcome.status === 'fulfilled') {
        const { answer, duplicate } = outcome.value;
        message.ack();
        this.options.sendVerdict({ verdict: 'accepted', id: answer.id, projectId, deliveryId: answer.deliveryId, duplicate });
        return;
      }
      const error = outcome.reason;
      if (isHooklineError(error) && !error.retryable) {
        refused.push(this.record(sink, { kind: 'reject', message, eventId, rejection: this.rejection(message, projectId, { reason: error.apiCode, message: error.message, details: error.details }) }));
        return;
      }
      if (route && isHooklineError(error) && error.code === 'HOOKLINE_ERR_OVERLOADED') {
        const answered = route.overloaded(projectId, message).then((answer) => {
          if (answer.kind === 'set_aside') message.ack();
          else if (answer.delayMs !== undefined) message.nak(answer.delayMs);
          else this.nak(message, error);
        }, () => this.nak(message, error));
        setAside.push(answered);
        return;
      }
      this.nak(message, isHooklineError(error) ? error : undefined);
    });
    const rejections = [...rejecting, ...refused];
    const recorded = await Promise.all(rejections.map((rejecting) => rejecting.recorded));
    recorded.forEach((stored, index) => this.settleRejection(rejections[index]!, stored));
    await Promise.all(setAside);
  }

  private ingest(sink: EventSink, { projectId, input, message }: Extract<Decision, { kind: 'ingest' }>) {
    const tracing = this.options.tracing;
    if (this.options.passesEventsOn) return sink.ingest(projectId, input, message.headers?.get('traceparent') || undefined);
    if (!tracing) return sink.ingest(projectId, input);
    return traceIngest(tracing, 'nats', projectId, 1, message.headers?.get('traceparent') || undefined, (traceparent) => sink.ingest(projectId, input, traceparent));
  }

  /** Redelivered later: the delay grows with the message's deliveries, and is at least the refusal's Retry-After. */
  nak(message: JsMsg, error?: HooklineError): void {
    const retryAfterMs = error?.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : 0;
    message.nak(redeliveryDelay({ deliveryCount: message.info.deliveryCount, baseMs: this.options.nakDelayMs, retryAfterMs, random: this.options.random }));
  }

  /** Validation of one message, without I/O: the event to ingest, or why it can never be taken. */
  private decide(message: JsMsg): Decision {
    const projectId = this.projectOf(message);
    const headerId = message.headers?.get('Nats-Msg-Id') || undefined;
    // Whom the verdict is about: the header's id, until the body names the event's own.
    let eventId = headerId;
    const reject = (rejection: Omit<Rejection, 'projectId' | 'source' | 'payload'>): Decision => ({ kind: 'reject', message, eventId, rejection: this.rejection(message, projectId, rejection) });

    let payload: unknown;
    try {
      payload = JSON.parse(textDecoder.decode(message.data));
    } catch {
      return reject({ reason: 'invalid_json', message: 'the message body is not valid JSON', details: [] });
    }
    if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
      const body = payload as Record<string, unknown>;
      if (body.id !== undefined && headerId !== undefined && body.id !== headerId) {
        return reject({ reason: 'validation_failed', message: `body id ${String(body.id)} differs from Nats-Msg-Id ${headerId}`, details: [{ path: 'id', message: 'must equal Nats-Msg-Id' }] });
      }
      // A stable id makes JetStream redeliveries of the same message de-duplicate in the store. The
      // store time joins the sequence because a re-created stream numbers from 1 again, and a new
      // event with an old event's id and body would be taken for a repeat and never delivered.
      body.id ??= headerId ?? `evt_js${message.seq}_${message.timestampNanos}`;
      if (typeof body.id === 'string') eventId = body.id;
    }
    const parsed = eventInputSchema.safeParse(payload);
    if (!parsed.success) {
      const details = inputProblems(parsed.error);
      return reject({ reason: 'validation_failed', message: problemsLine(details), details });
    }
    return { kind: 'ingest', message, projectId, eventId, input: parsed.data };
  }

  private rejection(message: JsMsg, projectId: string, rejection: Omit<Rejection, 'projectId' | 'source' | 'payload'>): Rejection {
    return { ...rejection, projectId, source: `nats:${message.subject}#${message.seq}`, payload: textDecoder.decode(message.data.subarray(0, REJECTED_PAYLOAD_BYTES)) };
  }

  /** Record first, then terminate (`settleRejection`): a message is never dropped without a trace. */
  private record(sink: EventSink, decision: Extract<Decision, { kind: 'reject' }>): Rejecting {
    return { message: decision.message, eventId: decision.eventId, rejection: decision.rejection, recorded: settled(() => sink.reject(decision.rejection)).then(() => true, () => false) };
  }

  private settleRejection({ message, eventId, rejection }: Rejecting, recorded: boolean): void {
    if (!recorded) {
      this.nak(message);
      return;
    }
    // A bare +TERM: servers before 2.10.4 ignore "+TERM <reason>" and would redeliver the message
    // after ack_wait, forever. The reason is in our rejected-events log.
    message.term();
    if (eventId !== undefined) this.options.sendVerdict({ verdict: 'rejected', id: eventId, projectId: rejection.projectId, reason: rejection.reason, message: rejection.message });
  }
}
