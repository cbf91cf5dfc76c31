import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt as ensureDistBuilt } from '../../scripts/build.mjs';
import { waitFor } from './wait-for.js';

/** A Hookline node run as a child process (`node dist/cli/main.js serve`), for crash and signal tests. */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRY = join(ROOT, 'dist', 'cli', 'main.js');

/**
 * Builds dist/ (scripts/build.mjs, the same build `npm start` runs when dist/ is stale) when it is
 * missing or older than its sources. Type errors that still let tsc emit (e.g. in a file under edit
 * that the server does not load) are reported as a warning; anything else fails.
 */
export function ensureBuilt(): void {
  for (const warning of ensureDistBuilt({ allowTypeErrors: true }).warnings) console.warn(warning);
}

export interface ChildNode {
  /** Where the API listens, e.g. http://127.0.0.1:41234. */
  readonly url: string;
  readonly process: ChildProcess;
  /** Every stdout line so far (pino JSON, one object a line). */
  readonly lines: string[];
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits for a structured log line whose `msg` matches. */
  waitForLog(msg: RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Log records at level error or above (pino level >= 50) so far. */
  errorLogs(): Record<string, unknown>[];
  /** Everything written to stderr so far (a crash's stack trace lands here, not in the log). */
  stderr(): string;
}

function parseLine(line: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** How many of a node's last log lines a failed start reports. */
const STARTUP_LINES_KEPT = 40;

export interface ChildNodeOptions {
  /** Extra arguments after `serve`, e.g. `['--cluster']`. @default none */
  args?: string[];
  /** How long the node may take to log that it is serving. @default 10000 */
  startTimeoutMs?: number;
  /** Called with each stdout line as it comes, before the start resolves (a test acting at a given step of the start). */
  onLine?: (line: string, child: ChildProcess) => void;
}

/**
 * Starts `hookline serve` on `dataDir` with port 0 and the given HOOKLINE_* settings (the parent's
 * HOOKLINE_* variables are not inherited), and resolves once it logs that it is serving.
 */
export async function startChildNode(dataDir: string, settings: Record<string, string>, options: ChildNodeOptions = {}): Promise<ChildNode> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('HOOKLINE_') && value !== undefined) environment[name] = value;
  Object.assign(environment, { HOOKLINE_HOST: '127.0.0.1', HOOKLINE_PORT: '0', HOOKLINE_DATA_DIR: dataDir, HOOKLINE_LOG_LEVEL: 'info', ...settings });

  const child = spawn(process.execPath, [ENTRY, 'serve', ...(options.args ?? [])], { cwd: ROOT, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  let pending = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const complete = pending.split('\n');
    pending = complete.pop()!;
    lines.push(...complete);
    for (const line of complete) options.onLine?.(line, child);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exitedWith: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedWith = { code, signal };
      resolve(exitedWith);
    });
  });

  // After 'exit', once its stdout and stderr are read to the end.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const waitForLog = (msg: RegExp, timeoutMs = 10_000) => {
    const logged = () => {
      for (const line of lines) {
        const record = parseLine(line);
        if (record && typeof record.msg === 'string' && msg.test(record.msg)) return record;
      }
      return null;
    };
    const seen = waitFor(logged, { timeoutMs, message: `hookline child to log ${msg}` });
    // A child that exits without the line fails the wait at once, not at its deadline.
    const gone = closed.then(() => logged() ?? Promise.reject(new Error(`hookline exited (${JSON.stringify(exitedWith)}) before logging ${msg}; stderr: ${stderr}`)));
    seen.catch(() => {});
    gone.catch(() => {});
    return Promise.race([seen, gone]);
  };

  try {
    const serving = await waitForLog(/^hookline is serving$/, options.startTimeoutMs);
    const errorLogs = () => lines.map(parseLine).filter((record): record is Record<string, unknown> => record !== null && Number(record.level) >= 50);
    return { url: String(serving.url), process: child, lines, exited, waitForLog, errorLogs, stderr: () => stderr };
  } catch (error) {
    child.kill('SIGKILL');
    // A start that timed out is diagnosed from what the node said before it: keep that in the failure.
    const said = [...lines, ...(pending ? [pending] : [])].slice(-STARTUP_LINES_KEPT).join('\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}\nlast ${STARTUP_LINES_KEPT} log lines:\n${said}\nstderr:\n${stderr.slice(-4000)}`, { cause: error });
  }
}
