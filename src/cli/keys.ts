import { z } from 'zod';
import type { KV } from '@nats-io/kv';
import { Engine, generateApiKey, hashApiKey } from '../actors/engine.js';
import { addDirectoryKey, directoryBucket, openDirectory, revokeDirectoryKey } from '../cluster/key-directory.js';
import { settingsFromEnvironment } from '../config/settings.js';
import { isoTime } from '../iso-time.js';
import { counted } from '../plural.js';
import { EventLogReader } from '../replay/event-log.js';
import { claimDataDir } from '../store/data-dir.js';
import { revokeApiKeyHash } from '../store/key-revocation.js';
import type { KeyRevocation } from '../store/key-revocation.js';
import { textTable } from '../text-table.js';
import { maskedNatsUrl, natsAccess } from '../transport/nats-access.js';
import { connectNats } from '../transport/nats-connection.js';
import { NO_POSITIONALS, commandWithHelp, runParsed, usageProblem } from './args.js';
import type { CliCommand } from './command.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';

const HELP = `Usage: hookline keys create --project NAME [--cluster]
       hookline keys list [--data-dir DIR]
       hookline keys revoke (--key-stdin | --key KEY) [--force] [--data-dir DIR | --cluster]

create  creates an API key for project NAME in HOOKLINE_DATA_DIR (./data), creating the project if it
        does not exist, and prints the key once (only its hash is stored). Run it while the service
        is stopped, or use POST /admin/v1/projects on a running service.
        --cluster adds a key to an existing project of a cluster instead: NAME is then the id
        (prj_…) of a project in the cluster's directory (an unknown one exits 1; POST
        /admin/v1/projects on a node creates projects), and every node accepts the key at once.
        With revoke --cluster it replaces a key without a gap: create a key, move the clients to
        it, revoke the old one.
list    lists the projects in the data directory (default HOOKLINE_DATA_DIR, else ./data): id, name,
        when it was created and how many API keys it has. Keys are stored as hashes, so no key can
        be shown again; create a new one if it is lost. Read-only: works beside a running service.
revoke  deletes an API key from the data directory (default HOOKLINE_DATA_DIR, else ./data) and prints
        the project it opened. Works beside a running service, which refuses the key from its next
        request on. Give the key itself: --key-stdin reads it from standard input (as docker login
        --password-stdin does), which keeps it out of shell history and the process list:
          printf '%s' "$OLD_KEY" | hookline keys revoke --key-stdin
        --key KEY takes it as an argument. An unknown key exits 1. A project's last key is kept
        (exit 1) unless --force: the project would then answer 401 to everything until
        "hookline keys create --project ID" (with the service stopped) gives it a new key.
        --cluster revokes the key in a cluster instead: it deletes it from the cluster's directory,
        and every node refuses it once its watch of the directory brings the deletion (within
        milliseconds).

--cluster is the default when HOOKLINE_CLUSTER=1, as for serve. It works on the cluster's directory
(KV bucket <HOOKLINE_NATS_STREAM>_directory) over the HOOKLINE_NATS_* settings the nodes use, with
no node running needed: run it where the nodes' settings are, e.g. docker compose exec -T on a node.`;

const PROJECT = z.string({ error: 'is required: --project NAME (1-64 of A-Z a-z 0-9 _ -)' }).regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ -');

/** `--cluster`: on by default where the nodes' own environment (HOOKLINE_CLUSTER=1) is. */
function clusterFlag(io: CliIo) {
  return z.boolean().default(io.env.HOOKLINE_CLUSTER === '1');
}

function createSchema(io: CliIo) {
  return z.object({ project: PROJECT, cluster: clusterFlag(io), positionals: NO_POSITIONALS });
}

function printKey(io: CliIo, project: string, apiKey: string): void {
  io.stdout.write(`API key for project "${project}" (shown once): ${apiKey}\n`);
}

async function create(io: CliIo, { project, cluster }: z.output<ReturnType<typeof createSchema>>): Promise<number> {
  if (cluster) return createInCluster(io, project);
  const settings = settingsFromEnvironment(io.env);
  // A writer like the server: it owns the directory while it writes (refused while a server runs).
  const dataDir = claimDataDir(settings.dataDir);
  try {
    const engine = await Engine.start({ settings });
    try {
      const apiKey = engine.store.getProject(project) ? await engine.addApiKey(project) : (await engine.createProject(project, undefined, project)).apiKey;
      printKey(io, project, apiKey);
      return 0;
    } finally {
      await engine.stop(0);
    }
  } finally {
    dataDir.release();
  }
}

async function createInCluster(io: CliIo, projectId: string): Promise<number> {
  const apiKey = generateApiKey();
  let directory: ClusterDirectory;
  try {
    directory = clusterDirectory(io);
    const addition = await directory.use((kv) => addDirectoryKey(kv, projectId, hashApiKey(apiKey)));
    if (addition.outcome === 'unknown_project') {
      io.stderr.write(`hookline keys create: no project "${projectId}" ${directory.where}: --project takes the id of an existing project (prj_…); POST /admin/v1/projects on a node creates one, with its first key\n`);
      return 1;
    }
  } catch (error) {
    io.stderr.write(`hookline keys create: ${(error as Error).message}\n`);
    return 1;
  }
  printKey(io, projectId, apiKey);
  return 0;
}

function listSchema(io: CliIo) {
  return z.object({ 'data-dir': z.string().min(1, 'must name a directory').default(io.env.HOOKLINE_DATA_DIR || './data'), positionals: NO_POSITIONALS });
}

function revokeSchema(io: CliIo) {
  return z
    .object({
      key: z.string().min(1, 'must not be empty').optional(),
      'key-stdin': z.boolean().default(false),
      force: z.boolean().default(false),
      cluster: clusterFlag(io),
      'data-dir': z.string().min(1, 'must name a directory').optional(),
      positionals: NO_POSITIONALS,
    })
    .refine((options) => (options.key === undefined) !== !options['key-stdin'], { message: 'give the key once: --key-stdin (reads it from standard input) or --key KEY' })
    .refine((options) => !(options.cluster && options['data-dir'] !== undefined), {
      message: `--data-dir is a single node's: a cluster's keys are in its NATS directory, which --cluster${io.env.HOOKLINE_CLUSTER === '1' ? ' (on by HOOKLINE_CLUSTER=1)' : ''} revokes from; give one of them`,
    })
    .transform((options) => ({ ...options, 'data-dir': options['data-dir'] ?? (io.env.HOOKLINE_DATA_DIR || './data') }));
}

/** Where a key is revoked: a data directory (one node), or a cluster's NATS directory. */
interface RevocationTarget {
  /** "in ./data", "in the cluster's directory (KV …)": what the messages say it was looked up in. */
  where: string;
  /** What to check when the key is not there. */
  unknownHint: string;
  revoke(apiKeyHash: string, allowLastKey: boolean): Promise<KeyRevocation>;
}

function dataDirTarget(dataDir: string): RevocationTarget {
  return {
    where: `in ${dataDir}`,
    unknownHint: "is another data directory's (check --data-dir or HOOKLINE_DATA_DIR)",
    revoke: (apiKeyHash, allowLastKey) => revokeApiKeyHash(dataDir, apiKeyHash, { allowLastKey }),
  };
}

/** A cluster's directory, reached as the nodes reach it. */
interface ClusterDirectory {
  /** "in the cluster's directory (KV … on …)": what the messages say was looked up. */
  where: string;
  /** Runs `action` on the directory over a connection of its own, closed after. */
  use<T>(action: (directory: KV) => Promise<T>): Promise<T>;
}

function clusterDirectory(io: CliIo): ClusterDirectory {
  // The nodes' own settings, read as serve --cluster reads them (HOOKLINE_NATS_URL is required).
  const settings = settingsFromEnvironment({ ...io.env, HOOKLINE_CLUSTER: '1' });
  return {
    where: `in the cluster's directory (KV ${directoryBucket(settings.natsStream)} on ${maskedNatsUrl(settings.natsUrl!)})`,
    async use(action) {
      const connection = await connectNats(natsAccess(settings), { timeout: 3000, reconnect: false });
      try {
        return await action(await openDirectory(connection, settings.natsStream));
      } finally {
        await connection.close();
      }
    },
  };
}

function clusterTarget(io: CliIo): RevocationTarget {
  const directory = clusterDirectory(io);
  return {
    where: directory.where,
    unknownHint: "is another cluster's (check HOOKLINE_NATS_URL and HOOKLINE_NATS_STREAM)",
    revoke: (apiKeyHash, allowLastKey) => directory.use((kv) => revokeDirectoryKey(kv, apiKeyHash, { allowLastKey })),
  };
}

async function revoke(io: CliIo, options: z.output<ReturnType<typeof revokeSchema>>): Promise<number> {
  const apiKey = options.key ?? (await io.readStdin()).trim();
  if (apiKey === '') return usageProblem(io, 'keys revoke', ['standard input held no key: pipe the key in, e.g. printf \'%s\' "$OLD_KEY" | hookline keys revoke --key-stdin']);
  let revocation: KeyRevocation;
  let target: RevocationTarget;
  try {
    target = options.cluster ? clusterTarget(io) : dataDirTarget(options['data-dir']);
    revocation = await target.revoke(hashApiKey(apiKey), options.force);
  } catch (error) {
    io.stderr.write(`hookline keys revoke: ${(error as Error).message}\n`);
    return 1;
  }
  if (revocation.outcome === 'unknown') {
    io.stderr.write(`hookline keys revoke: no such key ${target.where}: it was revoked already or ${target.unknownHint}\n`);
    return 1;
  }
  const { projectId } = revocation;
  if (revocation.outcome === 'last_key') {
    const replace = options.cluster ? `run hookline keys create --project ${projectId} --cluster, move the clients to the new key and revoke this one after, or ` : `stop the service, run hookline keys create --project ${projectId} and revoke this one after, or `;
    io.stderr.write(`hookline keys revoke: that is the last key of project "${projectId}": ${replace}pass --force to leave the project without a key\n`);
    return 1;
  }
  const noKey = `it has no key now (hookline keys create --project ${projectId}${options.cluster ? ' --cluster' : ', with the service stopped,'} makes one)`;
  const left = revocation.keysLeft === 0 ? noKey : `${counted(revocation.keysLeft, 'key')} left`;
  io.stdout.write(`revoked a key of project "${projectId}"${options.cluster ? ` ${target.where}` : ''}; ${left}\n`);
  // ensureDefaultProject adds HOOKLINE_API_KEY back at the next start.
  if (projectId === 'default' && io.env.HOOKLINE_API_KEY === apiKey) io.stderr.write('hookline keys revoke: HOOKLINE_API_KEY still holds this key: change or unset it, or the next start adds it again\n');
  return 0;
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
    if (subcommand === 'create') return runParsed(io, 'keys create', rest, { project: { type: 'string' }, cluster: { type: 'boolean' } }, createSchema(io), (options) => create(io, options));
    if (subcommand === 'list') return runParsed(io, 'keys list', rest, { 'data-dir': { type: 'string' } }, listSchema(io), (options) => list(io, options['data-dir']));
    if (subcommand === 'revoke') {
      const flags = { key: { type: 'string' }, 'key-stdin': { type: 'boolean' }, force: { type: 'boolean' }, cluster: { type: 'boolean' }, 'data-dir': { type: 'string' } } as const;
      return runParsed(io, 'keys revoke', rest, flags, revokeSchema(io), (options) => revoke(io, options));
    }
    return usageProblem(io, 'keys', [subcommand ? `unknown subcommand "${subcommand}": create, list or revoke` : 'missing subcommand: create, list or revoke']);
  });
}

export const keysCommand: CliCommand = createKeysCommand();
