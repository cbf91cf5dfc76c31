import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { isHooklineError } from '../errors.js';
import type { CliCommand } from './command.js';
import { createDiagramCommand } from './diagram.js';
import { createFuzzCommand } from './fuzz.js';
import { createInspectCommand } from './inspect.js';
import type { CliIo } from './io.js';
import { createKeysCommand } from './keys.js';
import { createPublishCommand } from './publish.js';
import { createReceiveCommand } from './receive.js';
import { createReplayCommand } from './replay.js';
import { serveCommand } from './serve.js';

/** Every command, talking to `io`. */
function commandsFor(io: CliIo): CliCommand[] {
  return [serveCommand, createKeysCommand(io), createPublishCommand(io), createReceiveCommand(io), createFuzzCommand(io), createReplayCommand(io), createInspectCommand(io), createDiagramCommand(io)];
}

/** The installed package's version: package.json is two levels up from both src/cli and dist/cli. */
export function packageVersion(): string {
  const manifest = z.object({ version: z.string().min(1) }).parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')));
  return manifest.version;
}

function overview(commands: readonly CliCommand[]): string {
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
  const commands = commandsFor(io);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    (name ? io.stdout : io.stderr).write(`${overview(commands)}\n`);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout.write(`hookline ${packageVersion()}\n`);
    return 0;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) {
    io.stderr.write(`hookline: unknown command "${name}"\n\n${overview(commands)}\n`);
    return 2;
  }
  try {
    return await command.run(args);
  } catch (error) {
    io.stderr.write(`hookline ${command.name}: ${describeFailure(error, io.env.HOOKLINE_DEBUG === '1')}\n`);
    return 1;
  }
}
