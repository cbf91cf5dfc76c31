import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HooklineError } from '../../src/errors.js';
import type { NatsAccess } from '../../src/transport/nats-access.js';
import { connectNats } from '../../src/transport/nats-connection.js';
import { expectOneLineFailure, serveUntilExit } from '../helpers/failed-start.js';
import { freePort, natsServerProcess, type NatsServerProcess } from '../helpers/nats.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Several seeds, one dead (nothing listens) and one that refuses Hookline's credentials: the start
 * must name the credential setting, as with that seed alone. nats.js tries the seeds in random
 * order and reports only the last one's error, so the start blamed the dead seed about half the
 * time; each case is tried several times at once for that reason. Own nats-server (own port, no
 * JetStream needed: it refuses before that), never the shared one.
 */

const USER = 'hookline';
const PASSWORD = 'right-password';
/** Starts tried at once per case: a start that blames whichever seed nats.js tried last passes them all once in 2^8. */
const TRIES = 8;

let server: NatsServerProcess;
let seeds: string;

beforeAll(async () => {
  const port = await freePort();
  server = natsServerProcess(['-a', '127.0.0.1', '-p', String(port), '--user', USER, '--pass', PASSWORD], `nats-server with a user on ${port}`, port);
  await server.start();
  seeds = `nats://127.0.0.1:${await freePort()},nats://127.0.0.1:${port}`;
}, 30_000);

afterAll(async () => {
  await server?.signal('SIGKILL');
});

/** The error of each of `TRIES` connects at once with `access`. */
async function startErrors(access: Omit<NatsAccess, 'natsUrl'>): Promise<HooklineError[]> {
  return Promise.all(
    Array.from({ length: TRIES }, () =>
      connectNats({ natsUrl: seeds, ...access }).then(
        async (connection) => {
          await connection.close();
          throw new Error('connected with refused credentials');
        },
        (error: unknown) => error as HooklineError,
      ),
    ),
  );
}

describe('a dead seed beside one that refuses the credentials', () => {
  it('a wrong token: the token is named, whichever seed nats.js tried last', async () => {
    const errors = await startErrors({ natsToken: 'wrong-token' });
    for (const error of errors) {
      expect(error.details[0]?.path, error.message).toBe('HOOKLINE_NATS_TOKEN');
      expect(error.message).toMatch(/^HOOKLINE_NATS_TOKEN=\*\*\*: the server refused the token/);
    }
  });

  it('a wrong password: the user is named, the password masked', async () => {
    const errors = await startErrors({ natsUser: USER, natsPassword: 'wrong-password' });
    for (const error of errors) {
      expect(error.details[0]?.path, error.message).toBe('HOOKLINE_NATS_USER');
      expect(error.message).toMatch(/^HOOKLINE_NATS_USER=hookline \(HOOKLINE_NATS_PASSWORD=\*\*\*\): the server refused this user and password/);
      expect(error.message).not.toContain('wrong-password');
    }
  });

  it('hookline serve with a wrong token: one line naming the token, no stack', async () => {
    const dir = makeTempDir('hookline-nats-seeds-');
    try {
      const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dir.path, HOOKLINE_NATS_URL: seeds, HOOKLINE_NATS_TOKEN: 'wrong-token' });
      expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_TOKEN=\*\*\*: the server refused the token .*check them against the server's authorization config$/);
      expect(result.stderr + result.stdout).not.toContain('wrong-token');
    } finally {
      dir.remove();
    }
  }, 30_000);
});
