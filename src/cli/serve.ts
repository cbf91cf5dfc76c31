import { startHookline } from '../app.js';
import type { Hookline } from '../app.js';
import { settingsFromEnvironment, unknownSettingWarnings } from '../config/settings.js';
import { isHooklineError } from '../errors.js';
import { IdleMemoryRelease } from '../idle-memory-release.js';
import { nativeHeapTrim } from '../native-heap-trim.js';
import type { CliCommand } from './command.js';
import { wantsHelp } from './command.js';

export const serveCommand: CliCommand = {
  name: 'serve',
  help: `Usage: hookline serve [--cluster]

Runs Hookline on the settings in the environment (see the README for every variable):
  HOOKLINE_HOST, HOOKLINE_PORT      listen address            (127.0.0.1, 8080)
  HOOKLINE_DATA_DIR                 LMDB directory            (./data)
  HOOKLINE_API_KEY                  key of project "default"  (generated and printed once if unset)
  HOOKLINE_ADMIN_KEY                enables /admin routes     (unset)
  HOOKLINE_RETRY_SCHEDULE           e.g. 0,5s,5m,30m,2h,5h,10h,10h
  HOOKLINE_DELIVERY_TIMEOUT         receiver timeout          (15s)
  HOOKLINE_ALLOW_PRIVATE_NETWORKS   1 to allow loopback/private callbacks (0)
  HOOKLINE_NATS_URL                 also ingest from NATS JetStream (unset); seeds comma-separated;
                                    HOOKLINE_NATS_STREAM, HOOKLINE_NATS_SUBJECT_PREFIX,
                                    HOOKLINE_NATS_DURABLE name its parts; HOOKLINE_NATS_USER/PASSWORD,
                                    _TOKEN, _NKEY, _CREDS, _TLS_CA, _TLS_CERT, _TLS_KEY secure it;
                                    HOOKLINE_NATS_REPLICAS (1) replicates its streams and buckets
                                    HOOKLINE_NATS_OUTCOMES=1 publishes outcomes on <root>.outcomes.>
  --cluster / HOOKLINE_CLUSTER=1    join a cluster over HOOKLINE_NATS_URL; HOOKLINE_NODE_ID,
                                    HOOKLINE_PARTITIONS (64), HOOKLINE_LEASE_TTL (5s),
                                    HOOKLINE_CHANGELOG_SNAPSHOT_EVERY (100000)
SIGTERM or SIGINT drains in-flight attempts, flushes LMDB and exits 0.`,
  async run(args) {
    if (wantsHelp(args)) {
      process.stdout.write(`${this.help}\n`);
      return 0;
    }
    const unknown = args.filter((arg) => arg !== '--cluster');
    if (unknown.length > 0) {
      process.stderr.write(`hookline serve: unknown option ${unknown[0]}; settings come from HOOKLINE_* variables (see --help)\n`);
      return 2;
    }
    for (const warning of unknownSettingWarnings(process.env)) process.stderr.write(`hookline serve: warning: ${warning}\n`);
    const settings = settingsFromEnvironment(args.includes('--cluster') ? { ...process.env, HOOKLINE_CLUSTER: '1' } : process.env);
    let releaseLog: Hookline['http']['log'] | undefined;
    // Started before the node, so that what a restart's resume grew is given back too.
    const memoryRelease = new IdleMemoryRelease({
      trimNative: nativeHeapTrim({ onUnavailable: (reason) => releaseLog?.debug({ reason }, 'idle: no malloc_trim here, glibc keeps what it freed') }),
      onRelease: ({ beforeBytes, afterBytes, durationMs, nativeTrimmed }) => {
        releaseLog?.info({ heapBeforeMb: toMb(beforeBytes), heapAfterMb: toMb(afterBytes), releaseMs: Math.round(durationMs), nativeTrimmed }, 'idle: gave memory back (compacting GC, malloc_trim)');
      },
    }).start();
    let node: Hookline;
    try {
      node = await startHookline(settings);
    } catch (error) {
      memoryRelease.stop();
      process.stderr.write(`hookline serve: ${startFailure(error)}\n`);
      // A failed start has nothing to drain. A handle a client library left open must not keep the
      // process up (nats.js keeps the socket of a handshake that timed out), so exit regardless.
      setTimeout(() => process.exit(1), 1_000).unref();
      return 1;
    }
    const log = node.http.log;
    releaseLog = log;
    log.info({ url: node.url, dataDir: settings.dataDir }, 'hookline is serving');
    if (node.generatedApiKey) {
      // Printed once, on purpose outside the structured log so it is never shipped to a log store.
      process.stdout.write(`\nAPI key of project "default" (shown once, store it now): ${node.generatedApiKey}\n\n`);
    }
    await new Promise<void>((resolve) => {
      let draining = false;
      const stop = (signal: string) => {
        // Ctrl-C on `npm start` delivers SIGINT twice (from the terminal, and forwarded by npm, which
        // execs this process): a repeat must neither start a second drain nor kill this one.
        if (draining) return;
        draining = true;
        log.info({ signal }, 'draining: no new events, retries, redrives, replays or webhook changes; finishing in-flight attempts');
        node.close().then(resolve, (error: unknown) => {
          log.error({ err: error }, 'shutdown failed');
          process.exitCode = 1;
          resolve();
        });
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
    });
    memoryRelease.stop();
    log.info('stopped');
    return Number(process.exitCode ?? 0);
  },
};

const toMb = (bytes: number): number => Math.round(bytes / 104857.6) / 10;

/** One line: a coded failure says what to do itself; anything else is unexpected, with its cause. */
function startFailure(error: unknown): string {
  if (isHooklineError(error)) return error.message;
  return `could not start: ${(error as Error).message ?? String(error)} (unexpected: please report it with the settings you used)`;
}
