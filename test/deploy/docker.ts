import { spawn, spawnSync } from 'node:child_process';
import { openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The Docker side of the deployment tests: the CLI run as a child process, dockerd started when none
 * answers, the local base image (scripts/docker-base.sh) and Hookline's image built from the
 * Dockerfile (scripts/docker-image.sh). Every container the tests run uses host networking, so
 * every connection stays on 127.0.0.1.
 */

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never throws (see `docker` for the throwing form). */
export function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status: status ?? -1, stdout, stderr }));
  });
}

/** `docker …`; resolves its stdout trimmed, throws with its stderr when it fails. */
export async function docker(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<string> {
  const result = await run('docker', args, options);
  if (result.status !== 0) throw new Error(`docker ${args.join(' ')} exited ${result.status}:\n${result.stderr.trim() || result.stdout.trim()}`);
  return result.stdout.trim();
}

/** Whether a Docker daemon answers. */
export function dockerAnswers(): boolean {
  return spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore' }).status === 0;
}

/**
 * Starts dockerd in the background when no daemon answers (CI here has none running), and waits
 * for it. Throws, saying why, when there is no dockerd to start or it does not come up.
 */
export async function ensureDockerd(): Promise<void> {
  if (dockerAnswers()) return;
  if (spawnSync('sh', ['-c', 'command -v dockerd'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('no Docker daemon answers and there is no dockerd to start: install docker.io (apt-get install docker.io)');
  }
  const log = join(tmpdir(), 'hookline-dockerd.log');
  const out = openSync(log, 'a');
  const daemon = spawn('dockerd', [], { detached: true, stdio: ['ignore', out, out] });
  daemon.unref();
  await waitFor(() => dockerAnswers(), { timeoutMs: 60_000, intervalMs: 250, message: `dockerd answering (its log: ${log})` });
}

/** The base image: HOOKLINE_BASE_IMAGE when set, else the local one scripts/docker-base.sh makes (once; then reused by its tag). */
export async function baseImage(): Promise<string> {
  if (process.env.HOOKLINE_BASE_IMAGE) return process.env.HOOKLINE_BASE_IMAGE;
  const result = await run('bash', [join(ROOT, 'scripts', 'docker-base.sh')]);
  if (result.status !== 0) throw new Error(`scripts/docker-base.sh failed (${result.status}):\n${result.stderr}`);
  return result.stdout.trim().split('\n').at(-1)!;
}

/**
 * Builds Hookline's image as `tag` on `base` with scripts/docker-image.sh, from the repository (or
 * HOOKLINE_DEPLOY_CONTEXT, a folder holding a copy of it, e.g. a `git archive` of a commit).
 */
export async function buildHooklineImage(tag: string, base: string): Promise<void> {
  const args = [join(ROOT, 'scripts', 'docker-image.sh'), '-t', tag, '--base', base];
  if (process.env.HOOKLINE_DEPLOY_CONTEXT) args.push('--context', process.env.HOOKLINE_DEPLOY_CONTEXT);
  const result = await run('bash', args);
  if (result.status !== 0) throw new Error(`scripts/docker-image.sh failed (${result.status}):\n${result.stderr.slice(-6000)}\n${result.stdout.slice(-2000)}`);
}

export interface ContainerState {
  Status: string;
  Running: boolean;
  ExitCode: number;
  Health?: { Status: string };
}

export async function containerState(name: string): Promise<ContainerState> {
  return JSON.parse(await docker(['inspect', '--format', '{{json .State}}', name])) as ContainerState;
}

/** Removes containers and volumes, ignoring those already gone. */
export async function removeQuietly(containers: string[], volumes: string[] = []): Promise<void> {
  if (containers.length > 0) await run('docker', ['rm', '-f', '-v', ...containers]);
  if (volumes.length > 0) await run('docker', ['volume', 'rm', '-f', ...volumes]);
}

/** `docker compose` (v2) when it runs here, else Debian's `docker-compose` (v1). */
export async function composeCommand(): Promise<string[]> {
  return (await run('docker', ['compose', 'version'])).status === 0 ? ['docker', 'compose'] : ['docker-compose'];
}

/**
 * A resolved compose file (`compose config`) less every `ports:` block: a container on the host's
 * network publishes nothing, and Debian's docker-compose (v1) refuses host networking with port
 * bindings, while an override can only add ports, never remove them (v2 has `!reset`, v1 does not).
 */
export function withoutPorts(config: string): string {
  const out: string[] = [];
  let dropIndent = -1;
  for (const line of config.split('\n')) {
    const indent = line.length - line.trimStart().length;
    if (dropIndent >= 0) {
      if (line.trim() === '' || indent > dropIndent || (indent === dropIndent && line.trimStart().startsWith('- '))) continue;
      dropIndent = -1;
    }
    if (/^\s*ports:\s*$/.test(line)) {
      dropIndent = indent;
      continue;
    }
    out.push(line);
  }
  return out.join('\n');
}
