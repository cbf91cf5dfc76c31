import { z } from 'zod';
import { Engine } from '../actors/engine.js';
import { settingsFromEnvironment } from '../config/settings.js';
import { isoTime } from '../iso-time.js';
import { counted } from '../plural.js';
import { EventLogReader } from '../replay/event-log.js';
import { claimDataDir } from '../store/data-dir.js';
import { textTable } from '../text-table.js';
import { NO_POSITIONALS, commandWithHelp, runParsed, usageProblem } from './args.js';
import type { CliCommand } from './command.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';

const HELP = `Usage: hookline keys create --project NAME
       hookline keys list [--data-dir DIR]

create  creates an API key for project NAME in HOOKLINE_DATA_DIR (./data), creating the project if it
        does not exist, and prints the key once (only its hash is stored). Run it while the service
        is stopped, or use POST /admin/v1/projects on a running service.
list    lists the projects in the data directory (default HOOKLINE_DATA_DIR, else ./data): id, name,
        when it was created and how many API keys it has. Keys are stored as hashes, so no key can
        be shown again; create a new one if it is lost. Read-only: works beside a running service.`;

const PROJECT = z.string({ error: 'is required: --project NAME (1-64 of A-Z a-z 0-9 _ -)' }).regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ -');

const CREATE_SCHEMA = z.object({ project: PROJECT, positionals: NO_POSITIONALS });

async function create(io: CliIo, { project }: z.output<typeof CREATE_SCHEMA>): Promise<number> {
  const settings = settingsFromEnvironment(io.env);
  // A writer like the server: it owns the directory while it writes (refused while a server runs).
  const dataDir = claimDataDir(settings.dataDir);
  try {
    const engine = await Engine.start({ settings });
    try {
      const apiKey = engine.store.getProject(project) ? await engine.addApiKey(project) : (await engine.createProject(project, undefined, project)).apiKey;
      io.stdout.write(`API key for project "${project}" (shown once): ${apiKey}\n`);
      return 0;
    } finally {
      await engine.stop(0);
    }
  } finally {
    dataDir.release();
  }
}

function listSchema(io: CliIo) {
  return z.object({ 'data-dir': z.string().min(1, 'must name a directory').default(io.env.HOOKLINE_DATA_DIR || './data'), positionals: NO_POSITIONALS });
}

async function list(io: CliIo, dataDir: string): Promise<number> {
  let reader: EventLogReader;
  try {
    reader = EventLogReader.open(dataDir);
  } catch (error) {
    io.stderr.write(`hookline keys list: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    const projects = reader.projects();
    if (projects.length === 0) {
      io.stdout.write(`no projects in ${dataDir}: hookline keys create --project NAME makes one\n`);
      return 0;
    }
    io.stdout.write(`${textTable([['project', 'name', 'created', 'API keys'], ...projects.map((project) => [project.id, project.name, isoTime(project.createdAt), String(project.keys)])]).join('\n')}\n`);
    io.stdout.write(`${counted(projects.length, 'project')} in ${dataDir}; keys are stored hashed and cannot be shown again\n`);
    return 0;
  } finally {
    await reader.close();
  }
}

/** `hookline keys`, talking to `io` (the process by default). */
export function createKeysCommand(io: CliIo = processIo()): CliCommand {
  const command = { name: 'keys', help: HELP };
  return commandWithHelp(io, command, async ([subcommand, ...rest]) => {
    if (subcommand === 'create') return runParsed(io, 'keys create', rest, { project: { type: 'string' } }, CREATE_SCHEMA, (options) => create(io, options));
    if (subcommand === 'list') return runParsed(io, 'keys list', rest, { 'data-dir': { type: 'string' } }, listSchema(io), (options) => list(io, options['data-dir']));
    return usageProblem(io, 'keys', [subcommand ? `unknown subcommand "${subcommand}": create or list` : 'missing subcommand: create or list']);
  });
}

export const keysCommand: CliCommand = createKeysCommand();
