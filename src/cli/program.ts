import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { isHooklineError } from '../errors.js';
import type { CliCommand } from './command.js';
import { wantsHelp, wantsVersion } from './command.js';
import type { CliIo } from './io.js';

/** A command as the overview lists it, and how to load it. */
export interface CommandEntry {
  name: string;
  summary: string;
  load(io: CliIo): Promise<CliCommand>;
}

/**
 * Every command. A command's module (with what it imports: the engine, Fastify, NATS, undici) is
 * loaded only when that command runs: loading all of them took 0.2–0.35 s more of every start,
 * `hookline --version` and `hookline serve` included.
 */
export const COMMANDS: readonly CommandEntry[] = [
  { name: 'serve', summary: 'run the webhook delivery service (what `npm start` runs)', load: async () => (await import('./serve.js')).serveCommand },
  { name: 'keys', summary: 'create and revoke API keys, and list the projects, in the local data directory', load: async (io) => (await import('./keys.js')).createKeysCommand(io) },
  { name: 'publish', summary: "publish one event to Hookline over NATS JetStream and wait for Hookline's verdict", load: async (io) => (await import('./publish.js')).createPublishCommand(io) },
  { name: 'receive', summary: 'a local receiver that verifies and prints each delivery', load: async (io) => (await import('./receive.js')).createReceiveCommand(io) },
  { name: 'fuzz', summary: 'fuzz a webhook receiver with valid and forged signed deliveries, and measure its edges', load: async (io) => (await import('./fuzz.js')).createFuzzCommand(io) },
  { name: 'replay', summary: 're-send stored events to another target (e.g. staging), signed with its secret', load: async (io) => (await import('./replay.js')).createReplayCommand(io) },
  { name: 'inspect', summary: "a delivery's path (its transitions) and the state machine's edges it took", load: async (io) => (await import('./inspect.js')).createInspectCommand(io) },
  { name: 'diagram', summary: 'state diagrams of the machines (Mermaid, DOT or SVG), from their definitions', load: async (io) => (await import('./diagram.js')).createDiagramCommand(io) },
];

/** The installed package's version: package.json is two levels up from both src/cli and dist/cli. */
export function packageVersion(): string {
  const manifest = z.object({ version: z.string().min(1) }).parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')));
  return manifest.version;
}

function overview(commands: readonly CommandEntry[]): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  const lines = commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
  return `Usage: hookline <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun "hookline <command> --help" for a command's options; "hookline --version" prints the version.`;
}

/**
 * How an error that escaped a command is shown. A Hookline error or a system call's failure
 * (`ENOENT`, `EACCES`, … on a path the user named) is the user's to fix: its message is enough, and
 * a stack trace would bury it. Anything else is a bug in Hookline: the message says so, and the
 * stack trace is printed only with HOOKLINE_DEBUG=1, for the report.
 */
export function describeFailure(error: unknown, debug: boolean): string {
  const stack = debug && error instanceof Error && error.stack ? `\n${error.stack}` : '';
  if (isHooklineError(error)) return `${error.message}${stack}`;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return `${message}${stack}`;
  return `unexpected error: ${message}${stack || '\n(a bug in Hookline: run again with HOOKLINE_DEBUG=1 for the stack trace, and report it)'}`;
}

/** Runs `hookline <argv…>` and resolves with the exit status; never rejects. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    (name ? io.stdout : io.stderr).write(`${overview(COMMANDS)}\n`);
    return name ? 0 : 2;
  }
  const entry = COMMANDS.find((candidate) => candidate.name === name);
  // After a command too (`hookline serve --version`), answered here so that no command's module
  // loads for it; `--help` with it is the command's, which prints its help.
  if (name === '--version' || name === '-v' || name === 'version' || (entry && wantsVersion(args) && !wantsHelp(args))) {
    io.stdout.write(`hookline ${packageVersion()}\n`);
    return 0;
  }
  if (!entry) {
    io.stderr.write(`hookline: unknown command "${name}"\n\n${overview(COMMANDS)}\n`);
    return 2;
  }
  try {
    const command = await entry.load(io);
    return await command.run(args);
  } catch (error) {
    io.stderr.write(`hookline ${entry.name}: ${describeFailure(error, io.env.HOOKLINE_DEBUG === '1')}\n`);
    return 1;
  }
}
