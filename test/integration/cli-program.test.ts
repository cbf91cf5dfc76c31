import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS, describeFailure, runCli } from '../../src/cli/program.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { captureIo } from '../helpers/cli.js';
import { ADMIN_KEY, startTestHookline } from '../helpers/hookline.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/** The `hookline` program itself: --version (alone and after a command), `keys list`, and how an error that escapes a command is shown. */

const ROOT = new URL('../../', import.meta.url).pathname;
const ENTRY = join(ROOT, 'dist', 'cli', 'main.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function hookline(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [ENTRY, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });
}

describe('hookline', () => {
  it('--version and -v print the package version', async () => {
    for (const flag of ['--version', '-v']) {
      const io = captureIo();
      expect(await runCli([flag], io)).toBe(0);
      expect(io.out()).toBe(`hookline ${VERSION}\n`);
    }
    const overview = captureIo();
    expect(await runCli(['--help'], overview)).toBe(0);
    expect(overview.out()).toContain('"hookline --version" prints the version');
  });

  it('--version and -v after any command print the version and exit 0, as alone; with --help the help wins', async () => {
    for (const args of [...COMMANDS.flatMap((entry) => [[entry.name, '--version'], [entry.name, '-v']]), ['keys', 'create', '--version'], ['replay', '--from', '1h', '-v']]) {
      const io = captureIo();
      expect(await runCli(args, io), `${args.join(' ')}: ${io.err()}`).toBe(0);
      expect(io.out(), args.join(' ')).toBe(`hookline ${VERSION}\n`);
      expect(io.err(), args.join(' ')).toBe('');
    }
    const help = captureIo();
    expect(await runCli(['replay', '--version', '--help'], help)).toBe(0);
    expect(help.out()).toMatch(/^Usage: hookline replay /);
  });

  it('each command listed in the overview loads the command of its name', async () => {
    // The overview's list names each command without loading its module: a wrong loader would run another command.
    for (const entry of COMMANDS) {
      const command = await entry.load(captureIo());
      expect(command.name).toBe(entry.name);
      expect(command.help).toContain(`hookline ${entry.name}`);
    }
  });

  it('keys list shows each project with its creation time and key count, never a key, beside a running node', async () => {
    const node = await startTestHookline({ adminKey: ADMIN_KEY });
    const created = await node.api('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'Billing team' } });
    expect(created.status).toBe(201);
    const { projectId, apiKey } = created.body as { projectId: string; apiKey: string };
    const io = captureIo({ HOOKLINE_DATA_DIR: node.dataDir });
    expect(await runCli(['keys', 'list'], io), io.err()).toBe(0);
    const lines = io.out().split('\n');
    expect(lines[0]).toMatch(/^project +name +created +API keys$/);
    expect(lines[1]).toMatch(/^default +default +\d{4}-\d{2}-\d{2}T\S+\+00:00 +1$/);
    expect(lines[2]).toMatch(new RegExp(`^${projectId} +Billing team +\\d{4}-\\d{2}-\\d{2}T\\S+\\+00:00 +1$`));
    expect(lines[3]).toBe(`2 projects in ${node.dataDir}; keys are stored hashed and cannot be shown again`);
    expect(io.out()).not.toContain(apiKey);
    expect(io.out()).not.toContain('test-key');

    const missing = captureIo({ HOOKLINE_DATA_DIR: '/nonexistent/hookline-data' });
    expect(await runCli(['keys', 'list'], missing)).toBe(1);
    expect(missing.err()).toContain('hookline keys list: no Hookline data in /nonexistent/hookline-data');
    const unknown = captureIo();
    expect(await runCli(['keys', 'show'], unknown)).toBe(2);
    expect(unknown.err()).toContain('hookline keys: unknown subcommand "show": create, list or revoke');
  });

  it('an error escaping a command is one line: a user error its message, a bug says so, stacks only with HOOKLINE_DEBUG=1', () => {
    const notADirectory = Object.assign(new Error("ENOTDIR: not a directory, mkdir '/etc/hostname/data'"), { code: 'ENOTDIR' });
    expect(describeFailure(notADirectory, false)).toBe("ENOTDIR: not a directory, mkdir '/etc/hostname/data'");
    const bug = new TypeError("Cannot read properties of undefined (reading 'id')");
    expect(describeFailure(bug, false)).toBe("unexpected error: Cannot read properties of undefined (reading 'id')\n(a bug in Hookline: run again with HOOKLINE_DEBUG=1 for the stack trace, and report it)");
    expect(describeFailure(bug, true)).toContain('\nTypeError: Cannot read properties of undefined');
    expect(describeFailure(bug, true)).toMatch(/\n {4}at /);
  });

  it('as the installed command: --version, and a data directory under a file gives no stack trace', () => {
    ensureBuilt();
    for (const args of [['--version'], ['serve', '--version']]) {
      const version = hookline(args);
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout).toBe(`hookline ${VERSION}\n`);
    }

    const dir = makeTempDir();
    try {
      const file = join(dir.path, 'a-file');
      writeFileSync(file, 'not a directory');
      const run = hookline(['keys', 'create', '--project', 'p1'], { HOOKLINE_DATA_DIR: join(file, 'data') });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/^hookline keys: .+\n$/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    } finally {
      dir.remove();
    }
  }, 180_000); // a first build of dist/ takes a while on a busy machine

  it('keys create is refused beside a running node (one owner per data directory), and works on a dotted directory once it stops', async () => {
    const dotted = makeTempDir('hookline.d-');
    try {
      const node = await startTestHookline({ dataDir: dotted.path });
      const refused = captureIo({ HOOKLINE_DATA_DIR: dotted.path });
      expect(await runCli(['keys', 'create', '--project', 'billing'], refused)).toBe(1);
      expect(refused.err()).toContain(`data directory ${dotted.path} is in use by process ${process.pid}`);
      await node.close();

      const created = captureIo({ HOOKLINE_DATA_DIR: dotted.path });
      expect(await runCli(['keys', 'create', '--project', 'billing'], created), created.err()).toBe(0);
      expect(created.out()).toMatch(/^API key for project "billing" \(shown once\): \S+\n$/);
      const listed = captureIo({ HOOKLINE_DATA_DIR: dotted.path });
      expect(await runCli(['keys', 'list'], listed), listed.err()).toBe(0);
      expect(listed.out()).toMatch(/^billing +billing /m);
    } finally {
      dotted.remove();
    }
  });
});
