import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ensureBuilt, startChildNode, type ChildNode } from '../helpers/child-node.js';
import { ENTRY, ROOT, expectOneLineFailure, hooklineLines, serveUntilExit } from '../helpers/failed-start.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * `hookline serve` as an operator meets it: one process per data directory, and start-up failures
 * that end the process at once with one line naming the setting, without a stack trace and without
 * writing to the data directory.
 */

/** Whether a user other than the owner can reach `path` (every parent searchable by others) and has `access` bits on it. */
function usableByOthers(path: string, access = 0o004): boolean {
  if ((statSync(path).mode & access) !== access) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

function tempDir(prefix?: string): string {
  const dir = makeTempDir(prefix);
  onTestFinished(() => dir.remove());
  return dir.path;
}

async function startNode(dataDir: string, settings: Record<string, string> = {}): Promise<ChildNode> {
  const node = await startChildNode(dataDir, { HOOKLINE_API_KEY: 'k', ...settings });
  onTestFinished(() => {
    node.process.kill('SIGKILL');
  });
  return node;
}

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

describe('one process per data directory', () => {
  it('refuses a second serve on the same data directory at once, naming the first one\'s pid, and the first keeps serving', async () => {
    const dataDir = tempDir();
    const first = await startNode(dataDir);

    const second = await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir });
    // Refused, not queued behind the lock: a second serve that waited for it would never exit while
    // the first runs, and the test would time out. (No bound in seconds: a loaded machine took 8.7
    // s to start the process at all.)
    expectOneLineFailure(second, new RegExp(`^hookline serve: data directory ${dataDir} is in use by process ${first.process.pid}\\b`));

    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect(first.process.exitCode).toBeNull();
  });

  it('lets a restart take the directory after kill -9: the kernel dropped the lock', async () => {
    const dataDir = tempDir();
    const first = await startNode(dataDir);
    first.process.kill('SIGKILL');
    await first.exited;
    expect(existsSync(join(dataDir, 'hookline.lock'))).toBe(true);

    const second = await startNode(dataDir);
    expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    // And the restarted node owns it in turn.
    expectOneLineFailure(await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir }), new RegExp(`is in use by process ${second.process.pid}\\b`));
  });
});

describe('start-up failures: one line naming the setting, exit 1, nothing written', () => {
  it('port in use', async () => {
    const port = await listening(createServer());
    const dataDir = join(tempDir(), 'data');
    const result = await serveUntilExit({ HOOKLINE_PORT: String(port), HOOKLINE_DATA_DIR: dataDir });
    expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_PORT=${port} is already in use on 127\\.0\\.0\\.1: stop the process listening there, or choose another HOOKLINE_PORT$`));
    expect(existsSync(dataDir)).toBe(false);
  });

  it('port in use, with an existing data directory: nothing added to it', async () => {
    const port = await listening(createServer());
    const dataDir = tempDir();
    const result = await serveUntilExit({ HOOKLINE_PORT: String(port), HOOKLINE_DATA_DIR: dataDir });
    expectOneLineFailure(result, /HOOKLINE_PORT=\d+ is already in use/);
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('HOOKLINE_HOST that does not resolve', async () => {
    const dataDir = join(tempDir(), 'data');
    const result = await serveUntilExit({ HOOKLINE_HOST: 'no-such-host.invalid', HOOKLINE_DATA_DIR: dataDir });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_HOST=no-such-host\.invalid does not resolve to an address \(\w+\): set it to an address or name of this machine/);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('HOOKLINE_DATA_DIR under a file', async () => {
    const base = tempDir();
    writeFileSync(join(base, 'plain-file'), 'x');
    const result = await serveUntilExit({ HOOKLINE_DATA_DIR: join(base, 'plain-file', 'data') });
    expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_DATA_DIR=${base}/plain-file/data cannot be used: ${base}/plain-file is a file, not a directory`));
  });

  it('HOOKLINE_DATA_DIR this user cannot write', async () => {
    const base = tempDir();
    chmodSync(base, 0o755);
    const dataDir = join(base, 'data');
    mkdirSync(dataDir, { mode: 0o755 });
    if (process.getuid?.() !== 0) {
      chmodSync(dataDir, 0o555);
    } else if (!usableByOthers(ENTRY) || !usableByOthers(process.execPath, 0o005)) {
      // Root writes everywhere, and this checkout or this node binary (say, one under /root) is closed
      // to other users: sysfs refuses even root.
      const result = await serveUntilExit({ HOOKLINE_DATA_DIR: '/sys/hookline-data' });
      expectOneLineFailure(result, /^hookline serve: HOOKLINE_DATA_DIR=\/sys\/hookline-data cannot be written by user root \((EACCES|EPERM)\); give that user write permission/);
      return;
    }
    // As root every directory is writable: run the node as nobody instead.
    const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir }, process.getuid?.() === 0 ? { uid: 65534 } : {});
    expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_DATA_DIR=${dataDir} cannot be written by user \\S+ \\(EACCES\\); give that user write permission`));
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it.skipIf(!existsSync('/proc/self'))('HOOKLINE_DATA_DIR under /proc, where mkdir answers ENOENT: refused at once (Node 20\'s recursive mkdir spun there forever); missing and relative directories are still made, and removed after a failed start', async () => {
    for (const dataDir of ['/proc/hookline-data', '/proc/hookline-data/nested']) {
      const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir }, { timeoutMs: 10_000 });
      expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_DATA_DIR=${dataDir} cannot be created or written: /proc exists but refused to hold /proc/hookline-data \\(ENOENT\\), as virtual filesystems such as /proc do; choose a HOOKLINE_DATA_DIR on a disk$`));
      // Refused, not spinning: serveUntilExit's 10 s would end a start that spun (its exit code then not 1).
    }

    const base = tempDir();
    const nested = relative(ROOT, join(base, 'a', 'b', 'data'));
    const port = await listening(createServer());
    expectOneLineFailure(await serveUntilExit({ HOOKLINE_PORT: String(port), HOOKLINE_DATA_DIR: nested }), /HOOKLINE_PORT=\d+ is already in use/);
    expect(readdirSync(base)).toEqual([]);
    const node = await startNode(nested);
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    expect(existsSync(join(base, 'a', 'b', 'data', 'data.mdb'))).toBe(true);
  });

  it.skipIf(!existsSync('/proc/self'))('Engine.start (the library entry) refuses a data directory under /proc too, instead of hanging', async () => {
    ensureBuilt();
    // In a child: the hang is a synchronous loop, which would also stop this test's own timers.
    const script = `import('./dist/index.js').then(({ Engine, defaultSettings }) => Engine.start({ settings: defaultSettings({ dataDir: '/proc/hookline-data/nested', logLevel: 'silent' }) })).then(() => console.log('started'), (error) => console.log(error.code, error.message))`;
    const child = spawn(process.execPath, ['-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    onTestFinished(() => void child.kill('SIGKILL'));
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await waitFor(() => child.exitCode !== null, { timeoutMs: 10_000, message: 'Engine.start to give up on /proc' });
    await exited;
    expect(stdout).toMatch(/^HOOKLINE_ERR_STARTUP HOOKLINE_DATA_DIR=\/proc\/hookline-data\/nested cannot be created or written: \/proc exists but refused to hold \/proc\/hookline-data \(ENOENT\)/);
  });

  it('HOOKLINE_NATS_URL at a server that is not NATS (silent, like Redis): exit 1 within 15 s, password masked, nothing written', async () => {
    const silent = createServer(() => {});
    const port = await listening(silent);
    const dataDir = tempDir();
    const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir, HOOKLINE_NATS_URL: `nats://app:s3cret@127.0.0.1:${port}` });
    expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_NATS_URL=nats://app:\\*\\*\\*@127\\.0\\.0\\.1:${port}: no NATS server answered within 5 s .*point it at a NATS server's client port`));
    expect(result.stderr).not.toContain('s3cret');
    expect(result.elapsedMs).toBeLessThan(15_000);
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('HOOKLINE_NATS_URL with a password holding "/" or "@" (not percent-encoded): no part of it is printed', async () => {
    const closed = createServer();
    const port = await listening(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    // A base64 password holds "/"; "@" slips in by hand. Either ended the masking early.
    for (const password of ['Zm9vYmFy/c2VjcmV0K3g=', 'hunter2@c2VjcmV0']) {
      const result = await serveUntilExit({ HOOKLINE_DATA_DIR: tempDir(), HOOKLINE_NATS_URL: `nats://app:${password}@127.0.0.1:${port}` });
      expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_NATS_URL=nats://app:\\*\\*\\*@127\\.0\\.0\\.1:${port}: `));
      for (const part of password.split(/[/@]/)) expect(result.stderr + result.stdout).not.toContain(part);
    }
  });

  it('a NATS seed, creds or private key given inline instead of a file path is named, never printed', async () => {
    const dir = tempDir();
    const certFile = join(dir, 'client.pem');
    writeFileSync(certFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const seed = 'SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY';
    const privateKey = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7c2VjcmV0a2V5\n-----END PRIVATE KEY-----\n';
    const creds = `-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`;
    const cases: Array<[setting: string, settings: Record<string, string>, secret: string[]]> = [
      ['HOOKLINE_NATS_NKEY', { HOOKLINE_NATS_NKEY: seed }, [seed]],
      ['HOOKLINE_NATS_CREDS', { HOOKLINE_NATS_CREDS: creds }, [seed, 'eyJ0eXAiOiJKV1Qi']],
      ['HOOKLINE_NATS_TLS_KEY', { HOOKLINE_NATS_TLS_CERT: certFile, HOOKLINE_NATS_TLS_KEY: privateKey }, ['c2VjcmV0a2V5', 'PRIVATE KEY']],
    ];
    for (const [setting, settings, secret] of cases) {
      const result = await serveUntilExit({ HOOKLINE_DATA_DIR: join(dir, setting), HOOKLINE_NATS_URL: 'nats://127.0.0.1:1', ...settings });
      expectOneLineFailure(result, new RegExp(`^hookline serve: ${setting}=\\*\\*\\*: holds what looks like the file's content \\(not shown\\), not the path of a file`));
      for (const part of secret) expect(result.stderr + result.stdout, setting).not.toContain(part);
    }
  });

  it('HOOKLINE_NATS_URL where nothing listens, single node and cluster', async () => {
    const closed = createServer();
    const port = await listening(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    for (const cluster of ['0', '1']) {
      const dataDir = tempDir();
      const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir, HOOKLINE_NATS_URL: `nats://127.0.0.1:${port}`, HOOKLINE_CLUSTER: cluster });
      expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_NATS_URL=nats://127\\.0\\.0\\.1:${port}: nothing listens there; start NATS \\(nats-server -js\\)`));
      expect(result.elapsedMs).toBeLessThan(15_000);
      expect(readdirSync(dataDir)).toEqual([]);
    }
  });

  it('cluster mode with HOOKLINE_NATS_URL at a silent server ends within 15 s too', async () => {
    const port = await listening(createServer(() => {}));
    const dataDir = tempDir();
    const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dataDir, HOOKLINE_NATS_URL: `nats://127.0.0.1:${port}`, HOOKLINE_CLUSTER: '1' });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_URL=nats:\/\/127\.0\.0\.1:\d+: no NATS server answered within 5 s/);
    expect(result.elapsedMs).toBeLessThan(15_000);
  });
});

describe('settings an operator got wrong', () => {
  it('HOOKLINE_NATS_OUTCOMES without NATS: one line naming it and what it needs', async () => {
    const dataDir = join(tempDir(), 'data');
    const result = await serveUntilExit({ HOOKLINE_NATS_OUTCOMES: '1', HOOKLINE_DATA_DIR: dataDir });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_OUTCOMES=1 needs HOOKLINE_NATS_URL: outcomes are published to NATS JetStream/);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('a bad value is named with what it must be, in plain words', async () => {
    const result = await serveUntilExit({ HOOKLINE_PORT: 'abc', HOOKLINE_DATA_DIR: join(tempDir(), 'data') });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('HOOKLINE_PORT must be a whole number 0-65535, got "abc"');
  });

  it('a misspelt HOOKLINE_* variable is reported with the closest setting', async () => {
    // The bad port ends the start right after the warnings, which come first.
    const result = await serveUntilExit({ HOOKLINE_PROT: '9090', HOOKLINE_PORT: 'x', HOOKLINE_DATA_DIR: join(tempDir(), 'data') });
    expect(hooklineLines(result.stderr)[0]).toBe('hookline serve: warning: HOOKLINE_PROT is not a Hookline setting and is ignored; did you mean HOOKLINE_PORT?');
  });
});

describe('data directory names', () => {
  it('serves from, and restarts on, a directory whose last part has a dot', async () => {
    const dataDir = join(tempDir(), 'hookline.d');
    const first = await startNode(dataDir);
    const created = await fetch(`${first.url}/v1/events`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: JSON.stringify({ id: 'evt_dotted', type: 'service.trigger.event', data: {} }) });
    expect(created.status).toBe(202);
    first.process.kill('SIGTERM');
    expect(await first.exited).toMatchObject({ code: 0 });

    const second = await startNode(dataDir);
    const again = await fetch(`${second.url}/v1/events`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: JSON.stringify({ id: 'evt_dotted', type: 'service.trigger.event', data: {} }) });
    // 200, not 202: the event stored before the restart is found again.
    expect(again.status).toBe(200);
    expect(existsSync(join(dataDir, 'data.mdb'))).toBe(true);
  });
});

describe('HOOKLINE_API_KEY changed after the first start', () => {
  it('adds the new key, keeps the old, and warns with how to revoke the old; the same key again warns nothing', async () => {
    ensureBuilt();
    const dataDir = tempDir();
    const warnings = (node: ChildNode) => node.lines.filter((line) => line.includes('HOOKLINE_API_KEY')).map((line) => JSON.parse(line) as Record<string, unknown>);
    const status = async (node: ChildNode, key: string) => (await fetch(`${node.url}/v1/logs/webhook-deliveries`, { headers: { authorization: `Bearer ${key}` } })).status;
    for (const key of ['k', 'k']) {
      const node = await startNode(dataDir, { HOOKLINE_API_KEY: key });
      expect(warnings(node)).toEqual([]);
      node.process.kill('SIGTERM');
      expect(await node.exited).toMatchObject({ code: 0 });
    }

    const rotated = await startNode(dataDir, { HOOKLINE_API_KEY: 'rotated-key' });
    expect(warnings(rotated)).toEqual([
      expect.objectContaining({
        level: 40,
        projectId: 'default',
        earlierKeys: 1,
        msg: `HOOKLINE_API_KEY was added to project "default" as a new key; the keys it had before (earlierKeys) still work: revoke each one no longer used with printf '%s' "$OLD_KEY" | hookline keys revoke --key-stdin`,
      }),
    ]);
    expect(rotated.lines.join('\n')).not.toContain('rotated-key');
    expect(await status(rotated, 'rotated-key')).toBe(200);
    expect(await status(rotated, 'k')).toBe(200);
  });
});
