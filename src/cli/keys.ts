import { parseArgs } from 'node:util';
import { Engine } from '../actors/engine.js';
import { settingsFromEnvironment } from '../config/settings.js';
import type { CliCommand } from './command.js';
import { usageError, wantsHelp } from './command.js';

export const keysCommand: CliCommand = {
  name: 'keys',
  summary: 'create projects and API keys in the local data directory',
  help: `Usage: hookline keys create --project NAME

Creates an API key for project NAME in HOOKLINE_DATA_DIR (./data), creating the project if it does not
exist, and prints the key once (only its hash is stored). Run it while the service is stopped, or
use POST /admin/v1/projects on a running service.`,
  async run(args) {
    if (wantsHelp(args)) {
      process.stdout.write(`${this.help}\n`);
      return 0;
    }
    const [subcommand, ...rest] = args;
    if (subcommand !== 'create') return usageError(this, subcommand ? `unknown subcommand "${subcommand}"` : 'missing subcommand "create"');
    let project: string | undefined;
    try {
      project = parseArgs({ args: rest, options: { project: { type: 'string' } } }).values.project;
    } catch (error) {
      return usageError(this, (error as Error).message);
    }
    if (!project || !/^[A-Za-z0-9_-]{1,64}$/.test(project)) return usageError(this, '--project NAME is required (1-64 of A-Z a-z 0-9 _ -)');
    const engine = await Engine.start({ settings: settingsFromEnvironment() });
    try {
      const apiKey = engine.store.getProject(project) ? await engine.addApiKey(project) : (await engine.createProject(project, undefined, project)).apiKey;
      process.stdout.write(`API key for project "${project}" (shown once): ${apiKey}\n`);
      return 0;
    } finally {
      await engine.stop(0);
    }
  },
};
