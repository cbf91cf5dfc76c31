import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * `npm start` under a service manager: systemd, a container runtime or `kill $!` signal only the
 * process they started, npm. The server underneath must drain and stop with it, not run on orphaned.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// dist/ fresh before `npm start`, so its prestart finds nothing to build and the test times the signal alone.
beforeAll(() => ensureBuilt(), 180_000);

/** Every process below `pid` (children, grandchildren, …), from /proc. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the parenthesised command name: state, then the parent pid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // the process ended while /proc was read
    }
  }
  const found: number[] = [];
  const frontier = [pid];
  while (frontier.length > 0) {
    const parent = frontier.pop()!;
    for (const [child, ppid] of parentOf) if (ppid === parent) found.push(child), frontier.push(child);
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `pid` is node running the server (not a shell whose command line merely mentions it). */
function isServerProcess(pid: number): boolean {
  try {
    const [program, entry, command] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return /(^|\/)node$/.test(program ?? '') && (entry ?? '').endsWith('dist/cli/main.js') && command === 'serve';
  } catch {
    return false;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

describe('npm start', () => {
  // The npm pid alone: a service manager. The whole group: Ctrl-C in a terminal, where the server
  // gets the SIGINT from the terminal and again from npm, and the repeat must not cut the drain short.
  it.each([
    ['SIGTERM', 'the npm process alone'],
    ['SIGINT', 'the npm process alone'],
    ['SIGINT', 'npm\'s whole process group (Ctrl-C)'],
  ] as const)('%s to %s drains the server and ends both, port freed, within 15 s', async (signal, target) => {
    const dataDir = makeTempDir();
    onTestFinished(() => dataDir.remove());
    const environment: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('HOOKLINE_') && value !== undefined) environment[name] = value;
    Object.assign(environment, { HOOKLINE_HOST: '127.0.0.1', HOOKLINE_PORT: '0', HOOKLINE_DATA_DIR: dataDir.path, HOOKLINE_API_KEY: 'npm-start-key', HOOKLINE_LOG_LEVEL: 'info' });

    // Its own process group, as under a service manager: nothing but the one kill below reaches it.
    const npm = spawn('npm', ['start'], { cwd: ROOT, env: environment, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    npm.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    npm.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    let npmExit: { code: number | null; signal: string | null } | null = null;
    npm.once('exit', (code, exitSignal) => (npmExit = { code, signal: exitSignal }));
    let serverPid: number | undefined;
    onTestFinished(() => {
      // Only if the test failed part way: never leave a server behind.
      for (const pid of [serverPid, npm.pid]) if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
    });

    const logRecords = () => output.split('\n').flatMap((line) => {
      try {
        return [JSON.parse(line) as { msg?: string; url?: string }];
      } catch {
        return [];
      }
    });
    const serving = await waitFor(() => {
      if (npmExit) throw new Error(`npm start exited (${JSON.stringify(npmExit)}) before serving:\n${output}`);
      return logRecords().find((record) => record.msg === 'hookline is serving');
    }, { timeoutMs: 60_000, message: 'npm start to log "hookline is serving"' });
    const port = Number(new URL(String(serving.url)).port);
    serverPid = descendants(npm.pid!).find(isServerProcess);
    expect(serverPid, `no server process under npm (${npm.pid})`).toBeDefined();
    expect(await portIsFree(port)).toBe(false);

    const signalledAt = Date.now();
    process.kill(target === 'the npm process alone' ? npm.pid! : -npm.pid!, signal);
    await waitFor(async () => npmExit !== null && !isAlive(serverPid!) && (await portIsFree(port)), {
      timeoutMs: 15_000,
      message: `npm (${npm.pid}) and the server (${serverPid}) to end and port ${port} to be free after ${signal}`,
    });
    const elapsedMs = Date.now() - signalledAt;

    const messages = logRecords().map((record) => record.msg);
    expect(messages.filter((msg) => msg?.startsWith('draining'))).toHaveLength(1);
    expect(messages).toContain('stopped');
    // Signalled alone, npm ends with its child's exit code. Ctrl-C reaches npm too, and npm may end
    // by that SIGINT itself, as a shell expects of a program interrupted at the terminal (seen when
    // the server's exit was handled before npm's own signal, on a loaded machine).
    const npmExits = target === 'the npm process alone' ? [{ code: 0, signal: null }] : [{ code: 0, signal: null }, { code: null, signal }];
    expect(npmExits).toContainEqual(npmExit);
    expect(elapsedMs).toBeLessThan(15_000);
  }, 120_000);
});
