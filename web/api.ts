/**
 * The dashboard's view of the API: the SDK's HooklineClient for the v1 contract, plus the shapes the
 * pages want for two readings (state counts, a redrive's dry run). Every call carries the key as a
 * bearer token; a 401 on any of them signs the operator out.
 */
import { HooklineClient } from '../src/sdk/client.js';
import { NETWORK_ERROR_CODE, isHooklineApiError } from '../src/sdk/errors.js';
import type { DeliveryStatus, EventType } from '../src/sdk/types.js';

export type StateCounts = Record<DeliveryStatus, number>;

export interface RedriveFilterInput {
  since?: string;
  until?: string;
  eventType?: EventType;
}

export class DashboardApi {
  readonly client: HooklineClient;

  /** `onUnauthorized` runs when the server refuses the key (it was revoked, or the node changed). */
  constructor(apiKey: string, onUnauthorized: () => void) {
    const fetchSigningOut: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status === 401) onUnauthorized();
      return response;
    };
    this.client = new HooklineClient({ baseUrl: location.origin, apiKey, fetch: fetchSigningOut });
  }

  /** Live count of this project's deliveries in each status (`GET /v1/stats/delivery-states`). */
  async stateCounts(signal?: AbortSignal): Promise<StateCounts> {
    return (await this.client.getStats(signal ? { signal } : {})).counts;
  }

  /** How many dead letters a redrive with this filter would start again, and whether the project has room for them now; changes nothing. */
  async previewRedrive(filter: RedriveFilterInput, signal?: AbortSignal): Promise<{ count: number; fits: boolean }> {
    const result = await this.client.redriveDeadLetters({ ...filter, dryRun: true }, signal ? { signal } : {});
    return { count: result.wouldRedrive ?? 0, fits: result.fits ?? true };
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
  if (isHooklineApiError(error) && error.code === NETWORK_ERROR_CODE) return `Hookline could not be reached: ${error.message}`;
  if (isHooklineApiError(error)) {
    if (error.status === 401) return 'That API key was not accepted (401 unauthorized). Check your project\'s key and try again.';
    return `${error.message} (${error.code}, HTTP ${error.status})`;
  }
  if (error instanceof DOMException && error.name === 'AbortError') return 'The request was cancelled.';
  return `Hookline could not be reached: ${error instanceof Error ? error.message : String(error)}`;
}

export { isHooklineApiError };
