import type { CliIo } from '../../src/cli/io.js';
import { waitFor } from './wait-for.js';

export interface CapturedIo extends CliIo {
  /** Everything written to stdout so far. */
  out(): string;
  /** Everything written to stderr so far. */
  err(): string;
  /** Aborts the stop signal, as Ctrl-C would. */
  stop(): void;
}

/**
 * An in-process stand-in for the terminal: output is captured (not a TTY, so no progress bars),
 * the environment and standard input are only what is given, and `stop()` plays the part of SIGINT.
 */
export function captureIo(env: Record<string, string | undefined> = {}, stdin = ''): CapturedIo {
  let stdout = '';
  let stderr = '';
  const controller = new AbortController();
  return {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
    stopSignal: () => controller.signal,
    readStdin: async () => stdin,
    out: () => stdout,
    err: () => stderr,
    stop: () => controller.abort(),
  };
}

/** Waits for `hookline receive` (run in-process on `io`) to print its address; returns it. */
export function receiverUrl(io: CapturedIo, timeoutMs = 5_000): Promise<string> {
  return waitFor(() => /listening on (http:\/\/\S+\/)/.exec(io.err())?.[1], { timeoutMs, message: 'hookline receive to listen' });
}
