/**
 * The dashboard's view of the API: the SDK's HooklineClient for the v1 contract, plus the two
 * readings only the dashboard needs (state counts, a redrive's dry run). Every call carries the key
 * as a bearer token; a 401 on any of them signs the operator out.
 */
import { HooklineClient } from '../src/sdk/client.js';
import { HooklineApiError, isHooklineApiError } from '../src/sdk/errors.js';
import type { DeliveryStatus, EventType } from '../src/sdk/types.js';

export type StateCounts = Record<DeliveryStatus, number>;

export interface RedriveFilterInput {
  since?: string;
  until?: string;
  eventType?: EventType;
}

export class DashboardApi {
  readonly client: HooklineClient;
  readonly #authorization: string;
  readonly #fetch: typeof fetch;

  /** `onUnauthorized` runs when the server refuses the key (it was revoked, or the node changed). */
  constructor(apiKey: string, onUnauthorized: () => void) {
    this.#authorization = `Bearer ${apiKey}`;
    this.#fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status === 401) onUnauthorized();
      return response;
    };
    this.client = new HooklineClient({ baseUrl: location.origin, apiKey, fetch: this.#fetch });
  }

  /** Live count of this project's deliveries in each status (`GET /v1/stats/delivery-states`). */
  async stateCounts(signal?: AbortSignal): Promise<StateCounts> {
    const body = await this.#json<{ counts: StateCounts }>('GET', '/v1/stats/delivery-states', undefined, signal);
    return body.counts;
  }

  /** How many dead letters a redrive with this filter would start again; changes nothing. */
  async previewRedrive(filter: RedriveFilterInput, signal?: AbortSignal): Promise<number> {
    const body = await this.#json<{ wouldRedrive: number }>('POST', '/v1/logs/webhook-deliveries/redrive', { ...filter, dryRun: true }, signal);
    return body.wouldRedrive;
  }

  async #json<T>(method: string, path: string, body: unknown, signal: AbortSignal | undefined): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', authorization: this.#authorization };
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    if (signal) init.signal = signal;
    const response = await this.#fetch(path, init);
    const text = await response.text();
    if (!response.ok) throw HooklineApiError.fromResponse(response.status, response.statusText, text);
    return JSON.parse(text) as T;
  }
}

/** The delivery machine drawn by `hookline diagram --format svg`, served by the node. */
export async function fetchDeliveryDiagram(): Promise<string> {
  const response = await fetch('/ui/diagrams/delivery.svg');
  if (!response.ok) throw new Error(`the diagram did not load (HTTP ${response.status})`);
  return response.text();
}

/** A sentence for an operator: the server's message and code, or what went wrong on the way. */
export function describeError(error: unknown): string {
  if (isHooklineApiError(error)) {
    if (error.status === 401) return 'That API key was not accepted (401 unauthorized). Check your project\'s key and try again.';
    return `${error.message} (${error.code}, HTTP ${error.status})`;
  }
  if (error instanceof DOMException && error.name === 'AbortError') return 'The request was cancelled.';
  return `Hookline could not be reached: ${error instanceof Error ? error.message : String(error)}`;
}

export { isHooklineApiError };
