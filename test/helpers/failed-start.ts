import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { ensureBuilt } from './child-node.js';

/** `hookline serve` started to fail: what it printed, how it exited and how long it took. */

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ENTRY = join(ROOT, 'dist', 'cli', 'main.js');

export interface FailedStart {
  code: number | null;
  stderr: string;
  stdout: string;
  elapsedMs: number;
}

/** Runs `hookline serve` with only these HOOKLINE_* settings and waits (20 s at most) for it to exit. */
export async function serveUntilExit(settings: Record<string, string>, options: { uid?: number; timeoutMs?: number } = {}): Promise<FailedStart> {
  ensureBuilt();
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('HOOKLINE_') && value !== undefined) environment[name] = value;
  Object.assign(environment, { HOOKLINE_HOST: '127.0.0.1', HOOKLINE_PORT: '0', HOOKLINE_API_KEY: 'k', HOOKLINE_LOG_LEVEL: 'info', ...settings });
  const started = performance.now();
  const child = spawn(process.execPath, [ENTRY, 'serve'], { cwd: ROOT, env: environment, stdio: ['ignore', 'pipe', 'pipe'], ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {}) });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timeoutMs = options.timeoutMs ?? 20_000;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  // A spawn that fails (say, a node binary this uid cannot execute) emits 'error' and never 'exit'.
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('exit', (exitCode) => resolve(exitCode));
    child.once('error', reject);
  }).finally(() => clearTimeout(timer));
  return { code, stdout, stderr, elapsedMs: performance.now() - started };
}

/** The lines on stderr, less Node's own deprecation warnings (not Hookline's to word). */
export function hooklineLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('hookline'));
}

export function expectOneLineFailure(result: FailedStart, pattern: RegExp): void {
  expect(result.code, `stderr: ${result.stderr}`).toBe(1);
  const lines = hooklineLines(result.stderr);
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

