import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';

/** A package as another project gets it: packed, then installed into a fresh project (the package tests). */

/** Runs `command` to its end, npm quiet (warnings only, no funding or audit); throws only when it cannot start. */
export function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, NPM_CONFIG_LOGLEVEL: 'warn', NPM_CONFIG_FUND: 'false', NPM_CONFIG_AUDIT: 'false', ...env } });
  if (result.error) throw result.error;
  return result;
}

/** `run`, throwing with the output unless it exits 0; returns stdout then stderr. */
export function succeed(command: string, args: string[], cwd: string): string {
  const result = run(command, args, cwd);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return `${result.stdout}${result.stderr}`;
}

/**
 * `npm pack` of `packageDir` into the empty folder `destination`; the tarball's name. Without the
 * package's scripts: the tests build with the helpers' build first, since prepack would run the same
 * build again, strictly, and fail on a file another change has mid-edit.
 */
export function packWithoutScripts(packageDir: string, destination: string): string {
  succeed('npm', ['pack', '--ignore-scripts', '--pack-destination', destination], packageDir);
  const tarball = readdirSync(destination).find((name) => name.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack of ${packageDir} wrote no tarball`);
  return tarball;
}

/** A new project at `path`, as `npm init -y` makes it (CommonJS). */
export function initProject(path: string): void {
  mkdirSync(path);
  succeed('npm', ['init', '-y'], path);
}
