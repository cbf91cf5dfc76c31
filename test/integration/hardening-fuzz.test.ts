import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import type { DeliverySender } from '../../src/actors/project-actor.js';
import { startHookline } from '../../src/app.js';
import type { Hookline } from '../../src/app.js';
import { defaultSettings } from '../../src/config/settings.js';
import { DELIVERY_STATUSES } from '../../src/machines/index.js';
import { EVENT_TYPES, METADATA_KEYS } from '../../src/sdk/types.js';

/**
 * Every route fuzzed with fast-check (fixed seeds): arbitrary and near-valid JSON bodies, bodies that
 * are not JSON, content types, authorization headers, extra headers, path parameters and query
 * strings. Whatever arrives, the answer is below 500, a 4xx carries the JSON error shape, nothing is
 * logged at error level, and afterwards the node is healthy and still delivers.
 */

const API_KEY = 'fuzz-key';
/** Fixed by default so a failure reproduces; FUZZ_SEED=<n> explores further. */
const SEED = Number(process.env.FUZZ_SEED ?? 4242);
const ADMIN_KEY = 'fuzz-admin-key';

/** Deliveries succeed at once without leaving the process: the fuzz must not reach the network. */
const instantSender: DeliverySender = {
  send: async () => ({ ok: true, statusCode: 204, durationMs: 1, error: null, errorCode: null, responseBody: '', retryAfterMs: null }),
};

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

const ROUTES: Array<{ method: string; path: string; body?: 'webhook' | 'event' | 'rotate' | 'redrive' | 'project'; query?: 'deliveries' | 'rejected' }> = [
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/metrics' },
  { method: 'PUT', path: '/v1/webhook', body: 'webhook' },
  { method: 'GET', path: '/v1/webhook' },
  { method: 'GET', path: '/v1/webhook/secret' },
  { method: 'POST', path: '/v1/webhook/secret/rotate', body: 'rotate' },
  { method: 'POST', path: '/v1/events', body: 'event' },
  { method: 'POST', path: '/v1/events/:eventId/replay' },
  { method: 'GET', path: '/v1/logs/webhook-deliveries', query: 'deliveries' },
  { method: 'GET', path: '/v1/logs/webhook-deliveries/:deliveryId' },
  { method: 'POST', path: '/v1/logs/webhook-deliveries/:deliveryId/retry' },
  { method: 'POST', path: '/v1/logs/webhook-deliveries/redrive', body: 'redrive' },
  { method: 'GET', path: '/v1/logs/rejected-events', query: 'rejected' },
  { method: 'GET', path: '/admin/v1/rejected-events', query: 'rejected' },
  { method: 'POST', path: '/admin/v1/projects', body: 'project' },
];

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 80 });
const anyText = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }));
const isoWithOffset = fc
  .tuple(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }), fc.constantFrom('Z', '+00:00', '-23:59', '+14:00', '+05:30', 'z', ''))
  .map(([date, offset]) => date.toISOString().replace('Z', offset));
const timeText = fc.oneof(isoWithOffset, anyText, fc.constantFrom('2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2026-01-01T24:00:00Z', '1e400', '-1', 'NaN'));
const numberish = fc.oneof(fc.integer().map(String), fc.double().map(String), fc.constantFrom('', ' 5 ', '1e3', '0x10', '250', '251', '0', '-0', 'Infinity', '5.5', '0b1'));

const nearValid = {
  webhook: fc.record(
    {
      callbackUrl: fc.oneof(fc.webUrl(), fc.constantFrom('http://127.0.0.1:1/x', 'http://[::1]/', 'ftp://x', 'https://example.com/' + 'a'.repeat(3000), 'http://169.254.169.254/', 'http://localhost./'), anyText),
      status: fc.oneof(fc.constantFrom('active', 'paused', 'disabled'), anyText),
      eventTypes: fc.oneof(fc.subarray([...EVENT_TYPES]), fc.array(fc.oneof(fc.constantFrom(...EVENT_TYPES), anyText), { maxLength: 5 }), fc.jsonValue()),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
  event: fc.record(
    {
      id: fc.oneof({ weight: 3, arbitrary: fc.stringMatching(/^evt_[A-Za-z0-9_-]{1,100}$/) }, { weight: 1, arbitrary: anyText }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }),
      type: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...EVENT_TYPES) }, { weight: 1, arbitrary: anyText }),
      data: fc.oneof({ weight: 6, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 })) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }),
      metadata: fc.oneof(
        { weight: 4, arbitrary: fc.dictionary(fc.constantFrom(...METADATA_KEYS), fc.string({ maxLength: 20 })) },
        { weight: 1, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...METADATA_KEYS), anyText), fc.oneof(anyText, fc.jsonValue({ maxDepth: 1 }))) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
      ),
      timestamp: fc.oneof({ weight: 4, arbitrary: isoWithOffset }, { weight: 1, arbitrary: timeText }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }),
    },
    // Bodies without type or data come from the arbitrary-JSON branch; here they are mostly there.
    { requiredKeys: ['type', 'data'] },
  ),
  rotate: fc.oneof(fc.record({ graceSeconds: fc.oneof(fc.integer(), fc.double(), anyText, fc.constantFrom(0, 2_592_000, 2_592_001, -1)) }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 })),
  redrive: fc.oneof(fc.record({ since: timeText, until: timeText, eventType: fc.oneof(fc.constantFrom(...EVENT_TYPES), anyText) }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 })),
  project: fc.oneof(fc.record({ name: fc.oneof(anyText, fc.string({ maxLength: 200 }), fc.jsonValue({ maxDepth: 1 })) }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 })),
};

const queries = {
  deliveries: fc.record(
    {
      status: fc.oneof(fc.constantFrom(...DELIVERY_STATUSES), anyText),
      eventType: fc.oneof(fc.constantFrom(...EVENT_TYPES), anyText),
      eventId: fc.oneof(fc.stringMatching(/^evt_[A-Za-z0-9]{1,30}$/), anyText, fc.constant('x'.repeat(300))),
      since: timeText,
      until: timeText,
      limit: numberish,
      cursor: fc.oneof(fc.stringMatching(/^dlv_[0-9A-Z]{26}$/), anyText),
    },
    { requiredKeys: [] },
  ),
  rejected: fc.record({ limit: numberish, cursor: fc.oneof(fc.stringMatching(/^rej_[0-9A-Z]{26}$/), anyText) }, { requiredKeys: [] }),
};

/** A query string from pairs, values percent-encoded, sometimes with raw (possibly malformed) pieces. */
const queryString = (named: fc.Arbitrary<Record<string, string>>) =>
  fc
    .tuple(named, fc.dictionary(printable, anyText, { maxKeys: 3 }), fc.constantFrom('', '&%', '&limit=%ZZ', '&a=%E0%A4%A', '&&&', '&limit=1&limit=2', '&__proto__=x', '&constructor[prototype][x]=1', '&status[]=pending'))
    .map(([known, extra, raw]) => {
      const pairs = [...Object.entries(known), ...Object.entries(extra)].map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`);
      const text = pairs.join('&') + raw;
      return text === '' ? '' : `?${text}`;
    });

const pathParameter = fc.oneof(
  fc.stringMatching(/^dlv_[0-9A-Z]{26}$/),
  fc.stringMatching(/^evt_[A-Za-z0-9_-]{1,30}$/),
  anyText.map(encodeURIComponent),
  fc.constantFrom('%', '%00', '..', '%2e%2e', 'a%2Fb', ' ', '%ZZ', 'x'.repeat(250), encodeURIComponent('é'.repeat(150)), 'known'),
);

const authorization = fc.oneof(
  { weight: 6, arbitrary: fc.constant(`Bearer ${API_KEY}`) },
  fc.constantFrom(`Bearer ${API_KEY}`, `bearer ${API_KEY}`, `Bearer ${ADMIN_KEY}`, 'Bearer', 'Bearer ', `Bearer ${API_KEY} extra`, `Basic ${Buffer.from(`${API_KEY}:`).toString('base64')}`, `Bearer ${API_KEY}x`, ''),
  printable,
  printable.map((text) => `Bearer ${text}`),
);
const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/vnd.api+json', 'application/json-patch+json', 'application/octet-stream', '*/*', ';', ''),
  printable,
);
const extraHeaders = fc.dictionary(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), printable, { maxKeys: 3 });

const body = (kind: keyof typeof nearValid | undefined) =>
  fc.oneof(
    { weight: 4, arbitrary: (kind ? nearValid[kind] : fc.jsonValue({ maxDepth: 3 })).map((value) => JSON.stringify(value)) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: anyText },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        'null',
        '{',
        '{"type":"service.trigger.event","data":{}',
        '{"__proto__":{"polluted":true},"type":"service.trigger.event","data":{}}',
        '{"constructor":{"prototype":{"polluted":true}},"type":"service.trigger.event","data":{}}',
        '{"type":"service.trigger.event","data":{"__proto__":{"x":1}}}',
        '{"type":"service.trigger.event","data":{"s":"\\ud800"}}',
        '[]',
        '"string"',
        '1e999',
        '\u0000',
        '{"type":"service.trigger.event","data":{"n":1},"type":"service.trigger.disabled"}',
        JSON.stringify({ type: 'service.trigger.event', data: { deep: JSON.parse('['.repeat(2000) + ']'.repeat(2000)) } }),
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const fuzzRequest: fc.Arbitrary<FuzzRequest & { parameterIndex: number }> = fc
  // Ingest is the route producers hammer: it gets three times the share of the others.
  .constantFrom(...ROUTES, ...ROUTES.filter((route) => route.body === 'event'), ...ROUTES.filter((route) => route.body === 'event'))
  .chain((route) =>
    fc.record({
      method: fc.oneof({ weight: 6, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') }),
      path: fc.tuple(pathParameter, fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '//', '/extra', '/..', '/%2e%2e/admin') })).map(([parameter, suffix]) => route.path.replace(/:[a-zA-Z]+/, parameter) + suffix),
      query: route.query ? queryString(queries[route.query]) : fc.oneof(fc.constant(''), queryString(fc.constant({}))),
      authorization: fc.oneof({ weight: 5, arbitrary: authorization }, { weight: 1, arbitrary: fc.constant(undefined) }),
      contentType: fc.oneof({ weight: 5, arbitrary: contentType }, { weight: 1, arbitrary: fc.constant(undefined) }),
      extra: extraHeaders,
      payload: body(route.body),
      parameterIndex: fc.nat(),
    }),
  )
  .map(({ method, path, query, authorization, contentType, extra, payload, parameterIndex }) => ({
    method,
    url: path + query,
    headers: { ...extra, ...(authorization !== undefined ? { authorization } : {}), ...(contentType !== undefined ? { 'content-type': contentType } : {}) },
    ...(payload !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload } : {}),
    parameterIndex,
  }));

async function startFuzzNode(): Promise<{ node: Hookline; errorLogs: string[] }> {
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  const errorLogs: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void (JSON.parse(line).level >= 50 && errorLogs.push(line)) });
  const node = await startHookline(
    defaultSettings({ dataDir: dir.path, port: 0, apiKey: API_KEY, adminKey: ADMIN_KEY, retrySchedule: [0, 10], retryJitter: false, deliveryTimeoutMs: 300, maxBodyBytes: 64 * 1024, logLevel: 'warn' }),
    { logger, sender: instantSender },
  );
  onTestFinished(() => node.close());
  return { node, errorLogs };
}

describe('route fuzzing', () => {
  it('answers every arbitrary request below 500, a 4xx always in the JSON error shape; the node stays healthy and keeps delivering', async () => {
    const { node, errorLogs } = await startFuzzNode();
    const known: string[] = [];
    const seen = new Map<number, number>();

    await fc.assert(
      fc.asyncProperty(fuzzRequest, async (request) => {
        const url = request.url.replace('known', known.length > 0 ? known[request.parameterIndex % known.length]! : 'known');
        const response = await node.http.inject({ method: request.method as 'GET', url, headers: request.headers, ...(request.payload !== undefined ? { payload: request.payload } : {}) });
        seen.set(response.statusCode, (seen.get(response.statusCode) ?? 0) + 1);
        const context = `${request.method} ${url} ${JSON.stringify(request.headers)} ${request.payload?.slice(0, 200)} → ${response.statusCode} ${response.body.slice(0, 300)}`;
        expect(response.statusCode, context).toBeLessThan(500);
        if (response.statusCode >= 400 && request.method !== 'HEAD') {
          const parsed = JSON.parse(response.body) as { error: { code: unknown; message: unknown; details: unknown } };
          expect(typeof parsed.error.code, context).toBe('string');
          expect(typeof parsed.error.message, context).toBe('string');
          expect(Array.isArray(parsed.error.details), context).toBe(true);
        }
        if (response.statusCode === 202 && request.method === 'POST' && url.startsWith('/v1/events')) {
          const answer = JSON.parse(response.body) as { id?: string; deliveryId?: string | null };
          if (answer.id) known.push(answer.id);
          if (answer.deliveryId) known.push(answer.deliveryId);
        }
      }),
      { seed: SEED, numRuns: 1500 },
    );

    // The fuzz reached past validation, not only 400s and 401s.
    expect(seen.get(202) ?? 0, JSON.stringify([...seen])).toBeGreaterThanOrEqual(3);
    expect(seen.get(200) ?? 0).toBeGreaterThan(100);
    expect(errorLogs, 'error-level logs during the fuzz').toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    const health = await node.http.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
    const put = await node.http.inject({ method: 'PUT', url: '/v1/webhook', headers, payload: { callbackUrl: 'https://example.com/hooks', status: 'active', eventTypes: [...EVENT_TYPES] } });
    expect(put.statusCode).toBe(200);
    const sent = await node.http.inject({ method: 'POST', url: '/v1/events', headers, payload: { type: 'service.trigger.event', data: { after: 'fuzz' } } });
    expect(sent.statusCode).toBe(202);
    const { deliveryId } = sent.json() as { deliveryId: string };
    await waitFor(async () => (await node.http.inject({ method: 'GET', url: `/v1/logs/webhook-deliveries/${deliveryId}`, headers })).json().status === 'succeeded', { message: 'a delivery after the fuzz' });
    // 1,500 requests: 4 s on an idle 2-core machine, past 30 s measured beside CI's other suites.
  }, 120_000);

  it('POST /v1/events with near-valid events: accepted ones are stored once and answered again the same; never a 5xx', async () => {
    const { node, errorLogs } = await startFuzzNode();
    const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
    await node.http.inject({ method: 'PUT', url: '/v1/webhook', headers, payload: { callbackUrl: 'https://example.com/hooks', status: 'active', eventTypes: [...EVENT_TYPES] } });
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(nearValid.event, async (event) => {
        const payload = JSON.stringify(event);
        const first = await node.http.inject({ method: 'POST', url: '/v1/events', headers, payload });
        expect(first.statusCode, `${payload.slice(0, 300)} → ${first.body.slice(0, 300)}`).toBeLessThan(500);
        if (first.statusCode !== 202) {
          expect([200, 400, 409], first.body).toContain(first.statusCode);
          return;
        }
        accepted++;
        const again = await node.http.inject({ method: 'POST', url: '/v1/events', headers, payload });
        if (typeof event.id === 'string') {
          expect(again.statusCode).toBe(200);
          expect(again.json()).toEqual(first.json());
        } else {
          expect(again.statusCode).toBe(202);
        }
        // The envelope the receiver would get is valid JSON with an offset timestamp.
        const { id } = first.json() as { id: string };
        const stored = node.engine.store.getEvent('default', id)!;
        const envelope = JSON.parse(Buffer.from(stored.envelope).toString('utf8')) as { id: string; timestamp: string };
        expect(envelope.id).toBe(id);
        expect(envelope.timestamp).toMatch(/[+-]\d{2}:\d{2}$/);
      }),
      { seed: SEED + 1, numRuns: 600 },
    );
    expect(accepted).toBeGreaterThan(20);
    expect(errorLogs).toEqual([]);
    expect((await node.http.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
