import { z } from 'zod';
import { RETRY_SCHEDULE_FORMAT, formatDuration, parseRetrySchedule } from '../config/duration.js';
import { HooklineError } from '../errors.js';
import { expected, inputProblems, oneOf, problemsLine, strictShape, wholeNumberFrom } from '../input-messages.js';
import { filterProblems } from '../filter/rule.js';
import type { FilterRule } from '../filter/rule.js';
import { DELIVERY_STATUSES } from '../machines/index.js';
import { eventInputSchema, eventTypeInput } from '../transport/event-input.js';

/** Parses `value` with `schema`, or throws a 400 naming every problem and where it is. */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown, where: 'body' | 'query' | 'params', at: readonly (string | number)[] = []): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = inputProblems(result.error, [where, ...at]);
  throw new HooklineError('HOOKLINE_ERR_VALIDATION', `invalid ${where}: ${problemsLine(details)}`, { details });
}

const isoDateTime = z.iso.datetime({ offset: true, local: false, error: expected('an ISO 8601 date-time with an offset, e.g. 2026-11-21T23:03:49+00:00') });
const isoToMs = isoDateTime.transform((text) => Date.parse(text));

const deliveryStatusInput = oneOf(DELIVERY_STATUSES, 'five delivery statuses');

/** Page size of every list route. */
export const PAGE_LIMIT = { min: 1, max: 250, default: 50 } as const;
const pageLimitMessage = `must be a whole number ${PAGE_LIMIT.min}-${PAGE_LIMIT.max}`;
// A query value is text, and only decimal digits are a page size: `Number()` (z.coerce) would also
// take `0x10`, `1e2` or ` 5 `, which the document's `integer` does not promise.
const pageLimit = z
  .preprocess(
    (value) => (typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value),
    z.number({ error: pageLimitMessage }).int(pageLimitMessage).min(PAGE_LIMIT.min, pageLimitMessage).max(PAGE_LIMIT.max, pageLimitMessage),
  )
  // prefault, not default: the document shows a default only on an input that is not transformed.
  .prefault(PAGE_LIMIT.default);

/** Custom delivery headers: how many, and the names Hookline sets itself or HTTP reserves for the connection. */
export const CUSTOM_HEADERS = {
  max: 20,
  maxValueLength: 1024,
  reserved: ['content-type', 'content-length', 'host', 'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'],
} as const;

const RESERVED_HEADERS: ReadonlySet<string> = new Set(CUSTOM_HEADERS.reserved);
// RFC 9110 token; a value may hold visible ASCII, spaces and tabs, never CR, LF or NUL (header injection).
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const headerValue = /^[\t\x20-\x7e]*$/;

export const customHeaders = z
  .record(z.string(), z.string({ error: 'must be a string' }), { error: 'must be an object of header names to string values' })
  .superRefine((headers, context) => {
    const names = Object.keys(headers);
    if (names.length > CUSTOM_HEADERS.max) context.addIssue({ code: 'custom', message: `at most ${CUSTOM_HEADERS.max} headers; got ${names.length}` });
    const seen = new Set<string>();
    for (const name of names) {
      const lower = name.toLowerCase();
      const problem = !headerName.test(name)
        ? 'not a valid header name (letters, digits and !#$%&\'*+.^_`|~-)'
        : lower.startsWith('webhook-') || RESERVED_HEADERS.has(lower)
          ? `Hookline sets ${name} itself (webhook-*, ${CUSTOM_HEADERS.reserved.join(', ')} cannot be set)`
          : seen.has(lower)
            ? 'given twice (header names are case-insensitive)'
            : !headerValue.test(headers[name]!)
              ? 'the value may hold only visible ASCII, spaces and tabs (no CR, LF or other control characters)'
              : headers[name]!.length > CUSTOM_HEADERS.maxValueLength
                ? `the value is longer than ${CUSTOM_HEADERS.maxValueLength} characters`
                : null;
      seen.add(lower);
      if (problem) context.addIssue({ code: 'custom', path: [name], message: problem });
    }
  })
  .describe(`Sent with every delivery (up to ${CUSTOM_HEADERS.max}); not covered by the signature. Names other than webhook-*, ${CUSTOM_HEADERS.reserved.join(', ')}.`);

const payloadFilter = z
  .record(z.string(), z.unknown(), { error: 'must be a filter rule (a JSON object) or null' })
  .superRefine((rule, context) => {
    // One path segment a step (`$or[1]`, `data.amount`, `$gt`), so that details read `body.filter.$or[1].data.amount.$gt`.
    for (const problem of filterProblems(rule)) context.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  })
  .transform((rule) => rule as FilterRule)
  .describe(
    'Delivers only events whose envelope matches. Keys are ANDed; a key is a path (`type`, `metadata.<key>`, `data.<key>[.<key>…]`) mapped to a plain value (equality) or to operators (`$in`, `$exists`, `$gt`, `$gte`, `$lt`, `$lte` on numbers or ISO date-times, `$prefix`), or `$and`/`$or` (lists of rules) or `$not` (a rule). At most 8 levels deep and 4,096 bytes of compact JSON. An event that does not match gets `deliveryId: null`.',
  );

const webhookUrl = z.url({ protocol: /^https?$/, error: expected('an absolute http or https URL') }).max(2048, { error: expected('a URL of at most 2,048 characters') });
const URL_CREDENTIALS = 'Credentials in it (`https://user:pass@host/path`, each part percent-encoded) are sent as `authorization: Basic …`, never in the request line.';

/** The range of `rateLimitPerSecond` (attempts started per second); `maxConcurrency`'s top is the node's HOOKLINE_ENDPOINT_CONCURRENCY. */
export const WEBHOOK_RATE_LIMIT = { min: 1, max: 100_000 } as const;

const MAX_CONCURRENCY = 'Attempts in flight to the endpoint at most, a whole number from 1 to the node\'s HOOKLINE_ENDPOINT_CONCURRENCY (default 50). `null` or left out: that setting alone. Ordered (`fifo`) delivery is one at a time anyway.';
const RATE_LIMIT_PER_SECOND = `Attempts started per second at most, a whole number from ${WEBHOOK_RATE_LIMIT.min} to ${WEBHOOK_RATE_LIMIT.max}: a token bucket holding a fiftieth of a second's worth (at least one), so that any one-second window sees at most rate + rate/50 attempts start (510 at 500). A recovering endpoint gets its backlog at this pace. \`null\` or left out: no pacing. Applies to \`fifo\` delivery too.`;

/**
 * Bounds of a webhook's `retrySchedule`: each step is an attempt the delivery's log keeps, and a
 * waiting delivery counts against HOOKLINE_MAX_WAITING_PER_PROJECT, so none may wait for years.
 */
export const WEBHOOK_RETRY_SCHEDULE = { maxSteps: 50, maxDelayMs: 30 * 24 * 60 * 60 * 1000 } as const;

const RETRY_SCHEDULE = `The delay before each attempt of a round, in the format of the node's HOOKLINE_RETRY_SCHEDULE (${RETRY_SCHEDULE_FORMAT}); its length is the attempts per round. At most ${WEBHOOK_RETRY_SCHEDULE.maxSteps} delays of at most ${formatDuration(WEBHOOK_RETRY_SCHEDULE.maxDelayMs)} each. Applies to the project's deliveries made and rounds (retry, redrive, replay) started after the PUT; a delivery already waiting keeps its round's count of attempts. \`null\` or left out: the node's schedule.`;

const SEND_TRACEPARENT = 'Each attempt carries the W3C `traceparent` header of its span (not covered by the signature, like `headers`), so that the receiver continues the trace. Only while the node exports traces (OTEL_EXPORTER_OTLP_ENDPOINT). Default `false`.';

/** The text of HOOKLINE_RETRY_SCHEDULE, parsed by the setting's own parser, then held to the webhook's bounds. */
const retrySchedule = z.string({ error: expected(`a retry schedule, ${RETRY_SCHEDULE_FORMAT}`) }).transform((text, context) => {
  let schedule: number[];
  try {
    schedule = parseRetrySchedule(text);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
  const tooLong = schedule.findIndex((delayMs) => delayMs > WEBHOOK_RETRY_SCHEDULE.maxDelayMs);
  if (schedule.length > WEBHOOK_RETRY_SCHEDULE.maxSteps) {
    context.addIssue({ code: 'custom', message: `at most ${WEBHOOK_RETRY_SCHEDULE.maxSteps} delays (attempts a round); got ${schedule.length}` });
  } else if (tooLong !== -1) {
    context.addIssue({ code: 'custom', message: `each delay at most ${formatDuration(WEBHOOK_RETRY_SCHEDULE.maxDelayMs)}; entry ${tooLong + 1} is ${formatDuration(schedule[tooLong]!)}` });
  } else {
    return schedule;
  }
  return z.NEVER;
});

/**
 * `PUT /v1/webhook` as a node parses it: `maxConcurrency` up to its `endpointConcurrency`. Without
 * one (the document, which no single node's setting describes), the range is given in words.
 */
export function configureWebhookBodyFor(endpointConcurrency: number | null) {
  const maxConcurrency = endpointConcurrency === null ? z.number().int().min(1) : wholeNumberFrom(1, endpointConcurrency, 'HOOKLINE_ENDPOINT_CONCURRENCY');
  return strictShape(
    {
      callbackUrl: webhookUrl.describe(`Where deliveries are POSTed. ${URL_CREDENTIALS} An \`authorization\` in \`headers\` wins over them.`),
      status: oneOf(['active', 'paused'], 'statuses a webhook can be set to'),
      eventTypes: z.array(eventTypeInput, { error: expected('a list of event types') }).min(1, 'must list at least one event type'),
      headers: customHeaders.optional(),
      filter: payloadFilter.nullable().optional(),
      ordering: oneOf(['unordered', 'fifo'], 'orderings')
        .optional()
        .describe('`fifo`: the endpoint receives the project\'s deliveries in ingest order, one at a time; a failing delivery holds back the ones behind it until it succeeds or dead-letters. Default `unordered` (concurrent).'),
      operationalUrl: webhookUrl
        .nullable()
        .optional()
        .describe(
          `Receives Hookline's signed operational events about the project (\`hookline.endpoint.disabled\`, \`hookline.endpoint.recovered\`, \`hookline.delivery.dead_lettered\`), signed with \`operationalSecret\` (GET /v1/webhook/secret). ${URL_CREDENTIALS}`,
        ),
      maxConcurrency: maxConcurrency.nullable().optional().describe(MAX_CONCURRENCY),
      rateLimitPerSecond: wholeNumberFrom(WEBHOOK_RATE_LIMIT.min, WEBHOOK_RATE_LIMIT.max).nullable().optional().describe(RATE_LIMIT_PER_SECOND),
      retrySchedule: retrySchedule.nullable().optional().describe(RETRY_SCHEDULE),
      sendTraceparent: z.boolean({ error: expected('true or false') }).optional().describe(SEND_TRACEPARENT),
    },
    'the webhook configuration',
  );
}

/** The documented `PUT /v1/webhook` body (openapi.ts). */
export const configureWebhookBody = configureWebhookBodyFor(null);

export const rotateSecretBody = strictShape({ graceSeconds: wholeNumberFrom(0, 30 * 24 * 3600).optional() }, 'a rotation')
  .optional()
  .transform((body) => ({ graceSeconds: body?.graceSeconds ?? 86_400 }));

export const deliveryListQuery = strictShape(
  {
    status: deliveryStatusInput.optional(),
    eventType: eventTypeInput.optional(),
    eventId: z.string({ error: expected('an event id') }).min(1, { error: expected('an event id') }).max(200, { error: expected('an event id of at most 200 characters') }).optional(),
    since: isoToMs.optional(),
    until: isoToMs.optional(),
    limit: pageLimit,
    cursor: z.string().regex(/^dlv_[0-9A-Z]{26}$/, 'must be a nextCursor from a previous page').optional(),
  },
  'the delivery log query',
);

/** `GET /v1/events`: the cursor is an event id, as `POST /v1/events` takes ids. */
export const eventListQuery = strictShape(
  {
    eventType: eventTypeInput.optional(),
    limit: pageLimit,
    cursor: z.string().regex(/^evt_[A-Za-z0-9_-]{1,100}$/, 'must be a nextCursor from a previous page').optional(),
  },
  'the event list query',
);

export const redriveBody = strictShape({ since: isoToMs.optional(), until: isoToMs.optional(), eventType: eventTypeInput.optional(), dryRun: z.boolean({ error: expected('true or false') }).optional() }, 'a redrive filter')
  .optional()
  .transform((body) => body ?? {});

export const deliveryIdParams = z.object({ id: z.string().min(1).max(200) });
export const eventIdParams = z.object({ eventId: z.string().min(1).max(200) });

const projectName = expected('a name of 1 to 100 characters');
export const createProjectBody = strictShape({ name: z.string({ error: projectName }).trim().min(1, { error: projectName }).max(100, { error: projectName }) }, 'a new project');

export const rejectedEventsQuery = strictShape(
  {
    limit: pageLimit,
    cursor: z.string().regex(/^rej_[0-9A-Z]{26}$/, 'must be a nextCursor from a previous page').optional(),
  },
  'the rejected-events query',
);

/** How many events one `POST /v1/events/batch` holds. */
export const BATCH_EVENTS = { min: 1, max: 1000 } as const;
const batchEventsMessage = `must hold ${BATCH_EVENTS.min} to ${BATCH_EVENTS.max} events`;
const eventBatchOf = <Item extends z.ZodType>(item: Item) =>
  strictShape({ events: z.array(item, { error: batchEventsMessage }).min(BATCH_EVENTS.min, batchEventsMessage).max(BATCH_EVENTS.max, batchEventsMessage) }, 'an event batch');

/** A batch as the route parses it: the list first, then each event on its own, so a bad event is refused alone. */
export const eventBatchBody = eventBatchOf(z.unknown());
/** A batch as documented: each event has the shape `POST /v1/events` takes. */
export const eventBatchDocumented = eventBatchOf(eventInputSchema);
