/** One `hookline <name>` command. `run` gets the arguments after the name and returns the exit code. */
export interface CliCommand {
  name: string;
  summary: string;
  /** Full help text shown by `hookline <name> --help`. */
  help: string;
  run(args: string[]): Promise<number>;
}

export function wantsHelp(args: string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/** Prints a problem and what to do next, as every CLI error should. */
export function usageError(command: CliCommand, message: string): number {
  process.stderr.write(`hookline ${command.name}: ${message}\nRun "hookline ${command.name} --help" for usage.\n`);
  return 2;
}
