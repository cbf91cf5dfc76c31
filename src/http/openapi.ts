import { z } from 'zod';
import { operationalEventSchema } from '../actors/operational-events.js';
import { eventInputSchema } from '../transport/event-input.js';
import * as answers from './response-schemas.js';
import { createPortalLinkBody, portalLinkCreatedResponse, portalLinksRevokedResponse, portalSessionResponse } from './portal-schemas.js';
import { BATCH_EVENTS, configureWebhookBody, createProjectBody, deliveryIdParams, deliveryListQuery, eventBatchDocumented, eventIdParams, eventListQuery, redriveBody, rejectedEventsQuery, rotateSecretBody } from './schemas.js';

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the zod schemas the routes parse their
 * input with (schemas.ts) and type their answers with (response-schemas.ts): one definition, so the
 * document cannot describe an API the code does not have. `GET /openapi.json` serves it, and
 * `npm run openapi` writes it to docs/openapi.json (a test fails when that copy is stale).
 */

type Auth = 'project' | 'admin' | 'none';

interface Answer {
  description: string;
  /** A JSON answer's schema: a component name from COMPONENTS. */
  json?: keyof typeof COMPONENTS;
  /** Any other answer: its media type and schema. */
  raw?: { mediaType: string; schema: Record<string, unknown> };
  headers?: Record<string, { description: string; schema: { type: 'integer' | 'string' } }>;
}

interface Operation {
  method: 'get' | 'put' | 'post' | 'delete';
  /** OpenAPI form: `{id}` for a path parameter. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  auth: Auth;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A component name from COMPONENTS; `optional` when the route takes no body as well (an empty JSON body is none). */
  body?: { component: keyof typeof COMPONENTS; optional?: boolean };
  answers: Record<number, Answer>;
  /** Error statuses besides the ones every operation of its kind has (see errorAnswers). */
  errors?: number[];
}

/** Named schemas: requests are described as they are sent (input), answers as they are sent back (output). */
const COMPONENTS = {
  ConfigureWebhookRequest: { schema: configureWebhookBody, io: 'input' },
  RotateSecretRequest: { schema: rotateSecretBody, io: 'input' },
  EventInput: { schema: eventInputSchema, io: 'input' },
  EventBatchRequest: { schema: eventBatchDocumented, io: 'input' },
  RedriveRequest: { schema: redriveBody, io: 'input' },
  CreateProjectRequest: { schema: createProjectBody, io: 'input' },
  CreatePortalLinkRequest: { schema: createPortalLinkBody, io: 'input' },
  Error: { schema: answers.errorResponse, io: 'output' },
  WebhookConfig: { schema: answers.webhookConfigResponse, io: 'output' },
  WebhookSecret: { schema: answers.webhookSecretResponse, io: 'output' },
  RotatedSecret: { schema: answers.rotatedSecretResponse, io: 'output' },
  EventAccepted: { schema: answers.eventAcceptedResponse, io: 'output' },
  EventBatchResult: { schema: answers.eventBatchResponse, io: 'output' },
  Delivery: { schema: answers.deliveryResponse, io: 'output' },
  DeliveryDetail: { schema: answers.deliveryDetailResponse, io: 'output' },
  DeliveryPage: { schema: answers.deliveryPageResponse, io: 'output' },
  StoredEvent: { schema: answers.storedEventResponse, io: 'output' },
  EventPage: { schema: answers.eventPageResponse, io: 'output' },
  RedriveResult: { schema: answers.redriveResponse, io: 'output' },
  RedriveDryRunResult: { schema: answers.redriveDryRunResponse, io: 'output' },
  ReplayResult: { schema: answers.replayResponse, io: 'output' },
  DeliveryStateCounts: { schema: answers.deliveryStateCountsResponse, io: 'output' },
  RejectedEventPage: { schema: answers.rejectedEventPageResponse, io: 'output' },
  ProjectCreated: { schema: answers.projectCreatedResponse, io: 'output' },
  Health: { schema: answers.healthResponse, io: 'output' },
  Ready: { schema: answers.readyResponse, io: 'output' },
  NotReady: { schema: answers.notReadyResponse, io: 'output' },
  OperationalEvent: { schema: operationalEventSchema, io: 'output' },
  PortalLinkCreated: { schema: portalLinkCreatedResponse, io: 'output' },
  PortalLinksRevoked: { schema: portalLinksRevokedResponse, io: 'output' },
  PortalSession: { schema: portalSessionResponse, io: 'output' },
} as const satisfies Record<string, { schema: z.ZodType; io: 'input' | 'output' }>;

const retryAfter = { 'retry-after': { description: 'Seconds to wait before sending again.', schema: { type: 'integer' as const } } };

const ERROR_DESCRIPTIONS: Record<number, Answer> = {
  400: { description: '`validation_failed` (`details` names each problem and where it is) or `invalid_json`.' },
  401: { description: '`unauthorized`: missing or unknown bearer key, or a portal link that expired or was revoked.' },
  403: { description: '`forbidden`: a read-only portal link makes no change, and portal links are made and revoked with the API key only.' },
  404: { description: 'Not found in this project (a key never sees another project\'s data).' },
  409: { description: 'Conflict with the current state; `code` says which.' },
  413: { description: '`payload_too_large`: the body exceeds HOOKLINE_MAX_BODY (256 KB by default), or HOOKLINE_MAX_BATCH_BODY (4 MB by default) for a batch.' },
  415: { description: '`unsupported_media_type`: send `content-type: application/json`.' },
  429: { description: '`rate_limited`: more than HOOKLINE_RATE_LIMIT requests per second for this project.', headers: retryAfter },
  500: { description: '`internal_error`; the server log has the details, in the line whose `reqId` the message and `details[0].reqId` name.' },
  502: { description: '`answer_too_large` (cluster mode): the owning node\'s answer is over NATS max_payload on its way to the node called; ask for a smaller page (`limit`) or call the owning node. The owning node\'s log has it under the `reqId` that `details[0].reqId` names.' },
  503: { description: '`overloaded`, `storage_full`, `shutting_down`, `storage_unavailable` or `partition_moving`; nothing was changed. Send again after Retry-After. `details[0].reqId` names the request (for `storage_unavailable`, the server log\'s line with the cause).', headers: retryAfter },
};

const deliveryIdPath = '/v1/logs/webhook-deliveries/{id}';

/** The 503 of a recovery operation: it takes deliveries into memory and writes them, as an ingest does, so the same limits refuse it. */
function recoveryRefusal(overloaded: string): Answer {
  return {
    description: `\`overloaded\` (${overloaded}), \`storage_full\` (the data directory is at HOOKLINE_MAX_DATA_SIZE or its disk nearly full), \`shutting_down\`, \`storage_unavailable\` or \`partition_moving\`; nothing was changed. Send again after Retry-After.`,
    json: 'Error',
    headers: retryAfter,
  };
}

export const OPERATIONS: readonly Operation[] = [
  {
    method: 'put', path: '/v1/webhook', operationId: 'configureWebhook', auth: 'project',
    summary: 'Configure the project\'s webhook endpoint',
    description: 'The signing secret is made by the first PUT and kept by later ones (so is the operational secret, once an `operationalUrl` is set). `eventTypes` holds only the three reserved event types. A PUT replaces the whole configuration: an optional field left out (`headers`, `filter`, `ordering`, `operationalUrl`, `maxConcurrency`, `rateLimitPerSecond`, `retrySchedule`, `sendTraceparent`) is cleared to its default.',
    body: { component: 'ConfigureWebhookRequest' },
    answers: { 200: { description: 'The configuration as stored.', json: 'WebhookConfig' } },
  },
  {
    method: 'get', path: '/v1/webhook', operationId: 'getWebhook', auth: 'project', summary: 'Read the webhook configuration',
    answers: { 200: { description: 'The configuration.', json: 'WebhookConfig' } }, errors: [404],
  },
  {
    method: 'get', path: '/v1/webhook/secret', operationId: 'getSecret', auth: 'project', summary: 'Read the current signing secret',
    answers: { 200: { description: 'The newest secret.', json: 'WebhookSecret' } }, errors: [404],
  },
  {
    method: 'post', path: '/v1/webhook/secret/rotate', operationId: 'rotateSecret', auth: 'project', summary: 'Rotate the signing secret',
    description: 'During `graceSeconds` (default 86400) the earlier secrets sign every delivery too; none signs longer than that (an older one whose grace ends sooner keeps its end), so `0` drops them all at once.',
    body: { component: 'RotateSecretRequest', optional: true },
    answers: { 200: { description: 'The new secret.', json: 'RotatedSecret' } }, errors: [404],
  },
  {
    method: 'post', path: '/v1/events', operationId: 'sendEvent', auth: 'project', summary: 'Send an event',
    description: '`type` is one of the three reserved event types and `metadata` holds only the seven keys of the envelope contract (receivers rely on both). Answered after the event is stored durably.',
    body: { component: 'EventInput' },
    answers: {
      202: { description: 'Stored; `deliveryId` is the delivery made for it, or null.', json: 'EventAccepted' },
      200: { description: 'A repeat of an event id with the same body: the first answer, no second delivery.', json: 'EventAccepted' },
    },
    errors: [409],
  },
  {
    method: 'post', path: '/v1/events/batch', operationId: 'sendEvents', auth: 'project', summary: 'Send many events in one commit',
    description: `${BATCH_EVENTS.min} to ${BATCH_EVENTS.max} events, each as \`POST /v1/events\` takes it, stored in one commit and answered after it is durable. Each event is de-duplicated by id as a single event is, copies within the batch included (the second is a repeat or a conflict). The rate limit counts events. An event over HOOKLINE_MAX_BODY is refused alone (413 in its place). When the node refuses events at all (draining, overloaded, storage full) or the commit fails, the whole batch gets that 503 and nothing is stored.`,
    body: { component: 'EventBatchRequest' },
    answers: {
      202: { description: 'Every event was stored now or is a repeat: one answer per event, in request order.', json: 'EventBatchResult' },
      207: { description: 'Some events were refused (each with the error it would get alone); the others are stored or repeats.', json: 'EventBatchResult' },
    },
  },
  {
    method: 'get', path: '/v1/events', operationId: 'listEvents', auth: 'project', summary: 'List stored events with their envelopes, newest first',
    description: 'Newest first by id: ids Hookline makes sort by acceptance time, an id given at ingest sorts by its text among them. Follow `nextCursor` for older pages; events stored meanwhile never shift a page (none is listed twice). `payload` is the envelope parsed, `body` the exact text Hookline signs and sends.',
    query: eventListQuery,
    answers: { 200: { description: 'One page.', json: 'EventPage' } },
  },
  {
    method: 'get', path: '/v1/events/{eventId}', operationId: 'getEvent', auth: 'project', summary: 'A stored event with its envelope',
    params: eventIdParams,
    answers: { 200: { description: 'The event.', json: 'StoredEvent' } }, errors: [404],
  },
  {
    method: 'get', path: '/v1/logs/webhook-deliveries', operationId: 'listDeliveries', auth: 'project', summary: 'List deliveries, newest first',
    description: '`since` is inclusive and `until` exclusive (on `createdAt`); follow `nextCursor` for older pages.',
    query: deliveryListQuery,
    answers: { 200: { description: 'One page.', json: 'DeliveryPage' } },
  },
  {
    method: 'get', path: deliveryIdPath, operationId: 'getDelivery', auth: 'project', summary: 'A delivery with its attempts and transitions',
    params: deliveryIdParams,
    answers: { 200: { description: 'The delivery.', json: 'DeliveryDetail' } }, errors: [404],
  },
  {
    method: 'post', path: `${deliveryIdPath}/retry`, operationId: 'retryDelivery', auth: 'project', summary: 'Retry one delivery',
    description: 'A dead-lettered delivery starts a new round; a retrying one is made due now. 409 `delivery_in_progress` (pending or delivering) or `delivery_succeeded`. 404 `delivery_not_found` also for a succeeded or dead-lettered delivery past HOOKLINE_RETENTION (counted from its creation), pruned or not. Takes no body: one sent is not read, whatever its type or size.',
    params: deliveryIdParams,
    answers: {
      202: { description: 'The delivery as the retry left it: `pending` (a dead letter\'s new round) or still `retrying`, due now (`nextAttemptAt` is the time of the retry).', json: 'Delivery' },
      503: recoveryRefusal('the delivery is a dead letter, and the project already has HOOKLINE_MAX_WAITING_PER_PROJECT deliveries waiting'),
    },
    errors: [404, 409],
  },
  {
    method: 'post', path: '/v1/logs/webhook-deliveries/redrive', operationId: 'redriveDeadLetters', auth: 'project', summary: 'Redrive dead-lettered deliveries matching a filter',
    description: 'Dead letters past HOOKLINE_RETENTION (counted from their creation) are left out, pruned or not. All or none: when the dead letters it would start do not all fit in the room HOOKLINE_MAX_WAITING_PER_PROJECT leaves the project, none is started (503 `overloaded`).',
    body: { component: 'RedriveRequest', optional: true },
    answers: {
      202: { description: 'How many started a new round.', json: 'RedriveResult' },
      200: { description: 'With `dryRun: true`: how many would start (those past HOOKLINE_RETENTION left out) and whether they fit under HOOKLINE_MAX_WAITING_PER_PROJECT now; nothing changes.', json: 'RedriveDryRunResult' },
      503: recoveryRefusal('the dead letters it would start do not all fit in the room HOOKLINE_MAX_WAITING_PER_PROJECT leaves the project; the message and `details` (`wouldRedrive`, `room`) say how many it would start and how many fit: narrow it with `since`, `until` or `eventType`, or wait'),
    },
  },
  {
    method: 'post', path: '/v1/events/{eventId}/replay', operationId: 'replayEvent', auth: 'project', summary: 'Deliver a stored event again, as a new delivery',
    description: 'Takes no body: one sent is not read, whatever its type or size.',
    params: eventIdParams,
    answers: { 202: { description: 'The new delivery.', json: 'ReplayResult' }, 503: recoveryRefusal('the project already has HOOKLINE_MAX_WAITING_PER_PROJECT deliveries waiting') }, errors: [404, 409],
  },
  {
    method: 'get', path: '/v1/stats/delivery-states', operationId: 'getStats', auth: 'project', summary: 'How many of the project\'s deliveries are in each status',
    answers: { 200: { description: 'Counts from the status index; cheap to poll.', json: 'DeliveryStateCounts' } },
  },
  {
    method: 'get', path: '/v1/logs/rejected-events', operationId: 'listRejectedEvents', auth: 'project', summary: 'Events from NATS that were rejected, newest first',
    query: rejectedEventsQuery,
    answers: { 200: { description: 'One page.', json: 'RejectedEventPage' } },
  },
  {
    method: 'post', path: '/v1/portal-links', operationId: 'createPortalLink', auth: 'project', summary: 'Make a link that opens the dashboard for this project without the API key',
    description: 'The link lasts `expiresIn` (default 1h, at most 7d) unless revoked. Its token is in the URL fragment, so the browser never sends it to a server; Hookline stores only its hash. A read-only link can look but not change anything (its writes answer 403). Any node of a cluster accepts a link made on another. Needs the API key: a portal link cannot make links (403).',
    body: { component: 'CreatePortalLinkRequest', optional: true },
    answers: { 201: { description: 'The link, shown this once.', json: 'PortalLinkCreated' } },
  },
  {
    method: 'delete', path: '/v1/portal-links', operationId: 'revokePortalLinks', auth: 'project', summary: 'Revoke every portal link of the project',
    description: 'The sessions the links opened end at their next call (401). Needs the API key (403 with a portal link).',
    answers: { 200: { description: 'How many links were still live.', json: 'PortalLinksRevoked' } },
  },
  {
    method: 'get', path: '/v1/portal-session', operationId: 'getPortalSession', auth: 'project', summary: 'The project of the caller\'s credential, and when it ends',
    description: 'The dashboard exchanges a portal link\'s token here for its session: the project, whether it is read-only and when it ends. An API key answers `expiresAt: null`.',
    answers: { 200: { description: 'The session.', json: 'PortalSession' } },
  },
  {
    method: 'post', path: '/admin/v1/projects', operationId: 'createProject', auth: 'admin', summary: 'Create a project and its first API key',
    description: 'Admin routes answer 404 when HOOKLINE_ADMIN_KEY is unset.',
    body: { component: 'CreateProjectRequest' },
    answers: { 201: { description: 'The project; the key is shown only this once.', json: 'ProjectCreated' } }, errors: [404],
  },
  {
    method: 'get', path: '/admin/v1/rejected-events', operationId: 'listAllRejectedEvents', auth: 'admin', summary: 'Rejected events of every project',
    query: rejectedEventsQuery,
    answers: { 200: { description: 'One page.', json: 'RejectedEventPage' } }, errors: [404],
  },
  {
    method: 'get', path: '/healthz', operationId: 'getHealth', auth: 'none', summary: 'Liveness: the process answers',
    answers: { 200: { description: 'Alive (also while draining: use /readyz to take a node out of rotation).', json: 'Health' } },
  },
  {
    method: 'get', path: '/readyz', operationId: 'getReadiness', auth: 'none', summary: 'Readiness: the node takes traffic',
    answers: {
      200: { description: 'Ready: send it traffic.', json: 'Ready' },
      503: { description: 'Starting, draining or unavailable: send traffic elsewhere.', json: 'NotReady', headers: retryAfter },
    },
  },
  {
    method: 'get', path: '/metrics', operationId: 'getMetrics', auth: 'none', summary: 'Prometheus metrics',
    answers: { 200: { description: 'Prometheus text exposition format.', raw: { mediaType: 'text/plain', schema: { type: 'string' } } } },
  },
  {
    method: 'get', path: '/openapi.json', operationId: 'getOpenApiDocument', auth: 'none', summary: 'This document',
    answers: { 200: { description: 'The OpenAPI 3.1 document.', raw: { mediaType: 'application/json', schema: { type: 'object', required: ['openapi', 'paths'] } } } },
  },
];

/** The error statuses an operation can answer: what its kind of route can fail with, plus its own. */
function errorStatuses(operation: Operation): number[] {
  const statuses = new Set(operation.errors ?? []);
  if (operation.auth !== 'none') for (const status of [401, 500]) statuses.add(status);
  if (operation.auth === 'project') for (const status of [429, 502, 503]) statuses.add(status);
  // A read-only portal link's writes, and any portal link's call about portal links.
  if (operation.auth === 'project' && (operation.method !== 'get' || operation.path === '/v1/portal-links')) statuses.add(403);
  if (operation.params || operation.query || operation.body) statuses.add(400);
  if (operation.body) for (const status of [413, 415]) statuses.add(status);
  return [...statuses].filter((status) => !(status in operation.answers)).sort((a, b) => a - b);
}

function componentSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const io of ['input', 'output'] as const) {
    const registry = z.registry<{ id: string }>();
    for (const [id, entry] of Object.entries(COMPONENTS)) if (entry.io === io) registry.add(entry.schema, { id });
    const { schemas } = z.toJSONSchema(registry, { target: 'draft-2020-12', io, unrepresentable: 'any', uri: (id) => `#/components/schemas/${id}` });
    for (const [id, schema] of Object.entries(schemas)) {
      // The document is the schema's home: a per-schema dialect and id would only repeat it.
      const { $schema: _dialect, $id: _id, ...rest } = schema as Record<string, unknown>;
      out[id] = rest;
    }
  }
  return Object.fromEntries(Object.keys(COMPONENTS).map((id) => [id, out[id]]));
}

/** Each property of a params or query object, as an OpenAPI parameter. */
function parameters(schema: z.ZodObject, where: 'path' | 'query'): unknown[] {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return { name, in: where, required: where === 'path' || (json.required ?? []).includes(name), ...(description ? { description } : {}), schema: propertySchema };
  });
}

const ref = (component: string) => ({ $ref: `#/components/schemas/${component}` });

function answerObject(answer: Answer): unknown {
  return {
    description: answer.description,
    ...(answer.headers ? { headers: Object.fromEntries(Object.entries(answer.headers).map(([name, header]) => [name, { description: header.description, schema: header.schema }])) } : {}),
    ...(answer.json ? { content: { 'application/json': { schema: ref(answer.json) } } } : {}),
    ...(answer.raw ? { content: { [answer.raw.mediaType]: { schema: answer.raw.schema } } } : {}),
  };
}

function operationObject(operation: Operation): unknown {
  const responses: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(operation.answers)) responses[status] = answerObject(answer);
  for (const status of errorStatuses(operation)) responses[String(status)] = answerObject({ ...ERROR_DESCRIPTIONS[status]!, json: 'Error' });
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    tags: [operation.auth === 'admin' ? 'admin' : operation.auth === 'none' ? 'operations' : 'v1'],
    security: operation.auth === 'none' ? [] : [{ [operation.auth === 'admin' ? 'adminKey' : 'projectKey']: [] }],
    ...(operation.params || operation.query
      ? { parameters: [...(operation.params ? parameters(operation.params, 'path') : []), ...(operation.query ? parameters(operation.query, 'query') : [])] }
      : {}),
    ...(operation.body ? { requestBody: { required: !operation.body.optional, content: { 'application/json': { schema: ref(operation.body.component) } } } } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b))),
  };
}

export function buildOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of OPERATIONS) (paths[operation.path] ??= {})[operation.method] = operationObject(operation);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Hookline',
      version: 'v1',
      description:
        'Webhook delivery: signed (Standard Webhooks), retried, dead-lettered and recoverable. Every /v1 route takes the project\'s API key as a bearer token; errors are `{"error":{"code","message","details"}}`; times are ISO 8601 with a numeric offset.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: 'http://127.0.0.1:8080', description: 'The default listen address (HOOKLINE_HOST, HOOKLINE_PORT).' }],
    tags: [
      { name: 'v1', description: 'The management API of one project (its API key).' },
      { name: 'admin', description: 'Across projects (HOOKLINE_ADMIN_KEY); 404 when that is unset.' },
      { name: 'operations', description: 'Health, readiness, metrics; no key.' },
    ],
    paths,
    webhooks: {
      operationalEvent: {
        post: {
          operationId: 'operationalEvent',
          summary: 'An operational event, POSTed to the project\'s operationalUrl',
          description:
            'A Standard Webhooks delivery (`webhook-id`, `webhook-timestamp`, `webhook-signature`) signed with the operational secret (`GET /v1/webhook/secret` shows it as `operationalSecret`); retried on the delivery schedule until a 2xx. Operational deliveries never report on themselves.',
          requestBody: { required: true, content: { 'application/json': { schema: ref('OperationalEvent') } } },
          responses: { '2XX': { description: 'Received; any other answer is retried.' } },
        },
      },
    },
    components: {
      securitySchemes: {
        projectKey: { type: 'http', scheme: 'bearer', description: 'A project\'s API key: `authorization: Bearer <API key>`; or a portal link\'s token (`hlp_…`, see `POST /v1/portal-links`), which opens the same routes but those about portal links, and only the GETs when the link is read-only.' },
        adminKey: { type: 'http', scheme: 'bearer', description: 'HOOKLINE_ADMIN_KEY: `authorization: Bearer <admin key>`.' },
      },
      schemas: componentSchemas(),
    },
  };
}

let cachedJson: string | undefined;

/** The document as served and as checked in: two-space JSON with a final newline. */
export function openApiJson(): string {
  cachedJson ??= `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
  return cachedJson;
}
