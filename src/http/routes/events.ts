import type { FastifyInstance } from 'fastify';
import { traceIngest } from '../../tracing/ingest-trace.js';
import { firstHeader } from '../../tracing/traceparent.js';
import type { IngestResult } from '../../transport/types.js';
import { HooklineError } from '../../errors.js';
import { eventInputSchema, type EventInput } from '../../transport/event-input.js';
import { answerError, toHooklineError } from '../error-answer.js';
import type { ProjectRateLimiter } from '../rate-limit.js';
import { queryEvents } from '../../store/event-query.js';
import { presentStoredEvent } from '../present.js';
import { ignoreBodies } from '../request-body.js';
import type { EventAcceptedResponse, EventBatchResponse, EventPageResponse, ReplayResponse, StoredEventResponse } from '../response-schemas.js';
import { eventBatchBody, eventIdParams, eventListQuery, parseInput } from '../schemas.js';
import type { HttpDeps } from '../server.js';

type BatchItem = EventBatchResponse['data'][number];

export function registerEventRoutes(app: FastifyInstance, { engine, embedded }: HttpDeps, rateLimiter: ProjectRateLimiter): void {
  const { maxBodyBytes, maxBatchBodyBytes } = engine.settings;
  // A batch is one ingest span, with its count of events.
  const submitBatch = (projectId: string, inputs: EventInput[], parent: string | undefined) => {
    const tracing = engine.tracing;
    if (!tracing) return embedded.submitBatch(projectId, inputs);
    return traceIngest(tracing, 'http', projectId, inputs.length, parent, (traceparent) => embedded.submitBatch(projectId, inputs, traceparent));
  };

  app.post('/events', async (request, reply) => {
    const input = parseInput(eventInputSchema, request.body, 'body');
    const tracing = engine.tracing;
    const { answer, duplicate } = tracing
      ? await traceIngest(tracing, 'http', request.projectId, 1, firstHeader(request.headers.traceparent), (traceparent) => embedded.submit(request.projectId, input, traceparent))
      : await embedded.submit(request.projectId, input);
    return reply.status(duplicate ? 200 : 202).send(answer satisfies EventAcceptedResponse);
  });

  /**
   * Many events, one commit: each is answered as `POST /v1/events` would answer it alone, in request
   * order. A refusal of the whole (rate, draining, overload, a full disk, a failed commit) is the
   * answer itself, so that the client sends the batch again as it would one event.
   */
  app.post('/events/batch', { bodyLimit: maxBatchBodyBytes, config: { countsEvents: true } }, async (request, reply) => {
    const { events } = parseInput(eventBatchBody, request.body, 'body');
    const waitSeconds = rateLimiter.take(request.projectId, events.length);
    if (waitSeconds > 0) throw rateLimiter.refusal(waitSeconds, 'events');

    // Only a body over HOOKLINE_MAX_BODY can hold an event over it; smaller ones skip the measuring.
    const measureEvents = !(Number(request.headers['content-length']) <= maxBodyBytes);
    // Dense, not `new Array(n)`: `every` below must see the events that were accepted, not skip them.
    const errors: Array<HooklineError | undefined> = Array.from({ length: events.length }, () => undefined);
    const inputs: EventInput[] = [];
    const positions: number[] = [];
    events.forEach((raw, index) => {
      try {
        if (measureEvents) refuseOversizedEvent(raw, index, maxBodyBytes);
        inputs.push(parseInput(eventInputSchema, raw, 'body', ['events', index]));
        positions.push(index);
      } catch (error) {
        errors[index] = toHooklineError(error);
      }
    });
    const outcomes = inputs.length > 0 ? await submitBatch(request.projectId, inputs, firstHeader(request.headers.traceparent)) : [];

    const data: BatchItem[] = new Array(events.length);
    outcomes.forEach((outcome, k) => {
      if (outcome.status === 'fulfilled') data[positions[k]!] = accepted(outcome.value);
      else errors[positions[k]!] = toHooklineError(outcome.reason);
    });
    // Nothing stored, all for a reason on this side (the commit failed): answered as one event
    // would be, by the error handler (logged there once, not once per event).
    const firstError = errors[0];
    if (firstError && firstError.status === 503 && errors.every((error) => error?.status === 503)) throw firstError;
    let allAccepted = true;
    errors.forEach((error, index) => {
      if (!error) return;
      allAccepted = false;
      data[index] = { status: error.status, ...answerError(error, request, `batch ingest failed for event ${index}`).toJSON() };
    });
    return reply.status(allAccepted ? 202 : 207).send({ data } satisfies EventBatchResponse);
  });

  app.get('/events', async (request): Promise<EventPageResponse> => {
    const query = parseInput(eventListQuery, request.query, 'query');
    const page = queryEvents(engine.store, request.projectId, query);
    return { data: page.data.map(presentStoredEvent), nextCursor: page.nextCursor };
  });

  app.get('/events/:eventId', async (request): Promise<StoredEventResponse> => {
    const { eventId } = parseInput(eventIdParams, request.params, 'params');
    const record = engine.store.getEvent(request.projectId, eventId);
    if (!record) throw new HooklineError('HOOKLINE_ERR_EVENT_NOT_FOUND', `no stored event ${eventId} in this project`);
    return presentStoredEvent(record);
  });

  ignoreBodies(app, (bodyless) => {
    bodyless.post('/events/:eventId/replay', async (request, reply) => {
      const { eventId } = parseInput(eventIdParams, request.params, 'params');
      const deliveryId = await engine.actorFor(request.projectId).recovery.replay(eventId);
      return reply.status(202).send({ deliveryId } satisfies ReplayResponse);
    });
  });
}

function accepted({ answer, duplicate }: IngestResult): BatchItem {
  return { status: duplicate ? 200 : 202, id: answer.id, deliveryId: answer.deliveryId };
}

/** An event of a batch is held to the limit it would meet sent alone. */
function refuseOversizedEvent(raw: unknown, index: number, maxBodyBytes: number): void {
  const bytes = Buffer.byteLength(JSON.stringify(raw) ?? '');
  if (bytes <= maxBodyBytes) return;
  const message = `event ${index} is ${bytes} bytes, over the ${maxBodyBytes} bytes one event may take (HOOKLINE_MAX_BODY)`;
  throw new HooklineError('HOOKLINE_ERR_PAYLOAD_TOO_LARGE', message, { details: [{ path: `body.events.${index}`, message }] });
}
