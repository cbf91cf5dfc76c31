/**
 * What a command talks to: two output streams, the environment, and a stop signal. The real
 * process is one implementation (`processIo`); tests pass their own and run a command in-process.
 */

export interface CliStream {
  write(text: string): unknown;
  /** Progress bars and redrawn lines only when this is true. */
  readonly isTTY?: boolean;
  /** Terminal width, when a terminal. */
  readonly columns?: number;
}

export interface CliIo {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Aborted when a long-running command (`receive`) should stop and clean up. The process's is
   * aborted by the first SIGINT or SIGTERM; it is made on first use, so short commands install no
   * signal handler.
   */
  stopSignal(): AbortSignal;
  /** Everything on standard input until its end, for a secret that must stay out of the arguments. */
  readStdin(): Promise<string>;
}

/** The real process: stdout, stderr, `process.env`, SIGINT/SIGTERM. */
export function processIo(): CliIo {
  let signal: AbortSignal | undefined;
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    stopSignal() {
      if (!signal) {
        const controller = new AbortController();
        const stop = (name: string) => () => controller.abort(new Error(name));
        process.once('SIGINT', stop('SIGINT'));
        process.once('SIGTERM', stop('SIGTERM'));
        signal = controller.signal;
      }
      return signal;
    },
    async readStdin() {
      let text = '';
      for await (const chunk of process.stdin.setEncoding('utf8')) text += chunk as string;
      return text;
    },
  };
}

/** Resolves when `signal` aborts (at once if it already has). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
