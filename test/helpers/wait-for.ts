/**
 * Polling with a deadline: the only way integration tests wait. Never a fixed sleep.
 */

export interface WaitForOptions {
  /**
   * Give up after this long. Reached only when the test fails: generous, since a CI machine running
   * several suites at once can take seconds over what takes milliseconds idle. @default 15000
   */
  timeoutMs?: number;
  /** Time between two polls. @default 10 */
  intervalMs?: number;
  /** What was being waited for, for the failure message. */
  message?: string;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Calls `predicate` every `intervalMs` until it returns a truthy value (which is returned) or the
 * deadline passes (then throws, naming what was awaited and the last value or error seen).
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 15_000, intervalMs = 10, message = 'condition' } = options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      last = await predicate();
      lastError = undefined;
      if (last) return last as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const seen = lastError !== undefined ? `last error: ${lastError instanceof Error ? lastError.message : String(lastError)}` : `last value: ${safeJson(last)}`;
      throw new Error(`waitFor: ${message} not reached within ${timeoutMs} ms (${seen})`);
    }
    await pause(intervalMs);
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 500) ?? String(value);
  } catch {
    return String(value);
  }
}
