#!/usr/bin/env node
import { isHooklineError } from '../errors.js';
import type { CliCommand } from './command.js';
import { diagramCommand } from './diagram.js';
import { fuzzCommand } from './fuzz.js';
import { inspectCommand } from './inspect.js';
import { keysCommand } from './keys.js';
import { publishCommand } from './publish.js';
import { receiveCommand } from './receive.js';
import { replayCommand } from './replay.js';
import { serveCommand } from './serve.js';

const commands: CliCommand[] = [serveCommand, keysCommand, publishCommand, receiveCommand, fuzzCommand, replayCommand, inspectCommand, diagramCommand];

function overview(): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  const lines = commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
  return `Usage: hookline <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun "hookline <command> --help" for a command's options.`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${overview()}\n`);
    return name ? 0 : 2;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) {
    process.stderr.write(`hookline: unknown command "${name}"\n\n${overview()}\n`);
    return 2;
  }
  return command.run(args);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = isHooklineError(error) ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`hookline: ${message}\n`);
    process.exitCode = 1;
  },
);
