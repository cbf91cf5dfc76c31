/** One `hookline <name>` command (its summary is in the overview's list, src/cli/program.ts). `run` gets the arguments after the name and returns the exit code. */
export interface CliCommand {
  name: string;
  /** Full help text shown by `hookline <name> --help`. */
  help: string;
  run(args: string[]): Promise<number>;
}

export function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/** `--version` or `-v` among a command's arguments: it prints the version as `hookline --version` does. */
export function wantsVersion(args: readonly string[]): boolean {
  return args.includes('--version') || args.includes('-v');
}
