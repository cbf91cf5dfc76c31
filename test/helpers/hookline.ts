import { onTestFinished } from 'vitest';
import { startHookline, type Hookline, type StartOptions } from '../../src/app.js';
import { defaultSettings, type Settings } from '../../src/config/settings.js';
import { HooklineClient } from '../../src/sdk/index.js';
import type { Delivery, DeliveryDetail, DeliveryStatus, EventType } from '../../src/sdk/index.js';
import type { Receiver } from './receiver.js';
import { checkAnswer, checkingFetch } from './openapi-check.js';
import { makeTempDir } from './temp-dir.js';
import { waitFor } from './wait-for.js';

export const API_KEY = 'test-key';
export const ADMIN_KEY = 'admin-test-key';
export const ALL_TYPES: EventType[] = ['service.trigger.event', 'service.connected_account.expired', 'service.trigger.disabled'];

/** An ISO 8601 time with a numeric offset, never `Z`, as every API time must be. */
export const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00$/;

export interface ApiAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the answer is not JSON. */
  body: any;
}

export interface TestHookline {
  node: Hookline;
  url: string;
  dataDir: string;
  settings: Settings;
  /** SDK client with the project key `test-key`. */
  client: HooklineClient;
  clientFor(apiKey: string): HooklineClient;
  /**
   * A raw HTTP call, for answers the SDK hides (statuses, error bodies, malformed requests).
   * `body` is JSON-encoded unless it is a string; `key: null` sends no authorization. Every answer
   * (and every answer the SDK clients get) is checked against the OpenAPI document: a status, media
   * type or body it does not describe fails the test.
   */
  api(method: string, path: string, options?: { body?: unknown; key?: string | null; headers?: Record<string, string> }): Promise<ApiAnswer>;
  close(): Promise<void>;
}

/**
 * A whole node on a fresh LMDB directory and an OS-chosen port, with the test settings of the
 * brief (3 attempts at 0, 50, 100 ms, no jitter, 500 ms receiver timeout). Closed, and its
 * directory removed, when the test finishes. Given a `dataDir` (a restart), it uses that one and
 * leaves its removal to the caller. `options` go to startHookline (a logger that keeps its lines).
 */
export async function startTestHookline(overrides: Partial<Settings> = {}, options: StartOptions = {}): Promise<TestHookline> {
  const dir = overrides.dataDir !== undefined ? { path: overrides.dataDir, remove: () => {} } : makeTempDir();
  const settings = defaultSettings({
    dataDir: dir.path,
    port: 0,
    apiKey: API_KEY,
    allowPrivateNetworks: true,
    retrySchedule: [0, 50, 100],
    retryJitter: false,
    deliveryTimeoutMs: 500,
    logLevel: 'silent',
    ...overrides,
  });
  let node: Hookline;
  try {
    node = await startHookline(settings, options);
  } catch (error) {
    dir.remove();
    throw error;
  }
  const mismatches: string[] = [];
  const clientFor = (apiKey: string) => new HooklineClient({ baseUrl: node.url, apiKey, fetch: checkingFetch(mismatches) });
  const test: TestHookline = {
    node,
    url: node.url,
    dataDir: dir.path,
    settings,
    client: clientFor(API_KEY),
    clientFor,
    async api(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      const key = options.key === undefined ? API_KEY : options.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let body: string | undefined;
      if (options.body !== undefined) {
        body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${node.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? null : JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      checkAnswer({ method, path, status: response.status, contentType: response.headers.get('content-type'), body: parsed });
      return { status: response.status, headers: response.headers, body: parsed };
    },
    async close() {
      try {
        await node.close();
      } finally {
        dir.remove();
      }
    },
  };
  onTestFinished(() => test.close());
  // An SDK call whose mismatch the test caught as an expected error still fails the test.
  onTestFinished(() => {
    if (mismatches.length > 0) throw new Error(`API answers differ from docs/openapi.json:\n${mismatches.join('\n')}`);
  });
  return test;
}

/** PUTs the webhook to `receiver` and hands the receiver the secret to verify with. */
export async function configureReceiver(
  hookline: TestHookline,
  receiver: Receiver,
  options: { status?: 'active' | 'paused'; eventTypes?: EventType[]; client?: HooklineClient } = {},
): Promise<string> {
  const client = options.client ?? hookline.client;
  await client.configureWebhook({ callbackUrl: receiver.url, status: options.status ?? 'active', eventTypes: options.eventTypes ?? ALL_TYPES });
  const { secret } = await client.getSecret();
  receiver.secret = secret;
  return secret;
}

/** Polls the log API until the delivery reaches `status` (by default within 15 s, as `waitFor`); returns its detail. */
export function waitForDeliveryStatus(client: HooklineClient, deliveryId: string, status: DeliveryStatus, timeoutMs = 15_000): Promise<DeliveryDetail> {
  return waitFor(
    async () => {
      const detail = await client.getDelivery(deliveryId);
      return detail.status === status ? detail : null;
    },
    { timeoutMs, message: `delivery ${deliveryId} to be ${status}` },
  );
}

/** Every delivery of the project, following nextCursor. */
export async function allDeliveries(client: HooklineClient, limit = 250): Promise<Delivery[]> {
  const out: Delivery[] = [];
  for await (const delivery of client.listDeliveries({ limit })) out.push(delivery);
  return out;
}

/** A minimal valid event of `type`. */
export function sampleEvent(type: EventType = 'service.trigger.event', data: Record<string, unknown> = { n: 1 }) {
  return { type, data };
}
