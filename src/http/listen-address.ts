import { createServer } from 'node:net';
import { HooklineError } from '../errors.js';

/**
 * Binds HOOKLINE_HOST:HOOKLINE_PORT once and lets go, so that a taken port or a host that is not
 * this machine's fails the start before the data directory or NATS is touched. The real listen
 * comes later and can still lose a race for the port; it reports through `listenError` too.
 * @throws {HooklineError} `HOOKLINE_ERR_STARTUP` naming the setting, its value and what to do
 */
export async function checkListenAddress(host: string, port: number): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (error) {
    throw listenError(error, host, port);
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** What a failed listen means for the operator, in one sentence that names the setting. */
export function listenError(error: unknown, host: string, port: number): HooklineError {
  const code = (error as NodeJS.ErrnoException).code;
  let message: string;
  let setting = 'HOOKLINE_PORT';
  switch (code) {
    case 'EADDRINUSE':
      message = `HOOKLINE_PORT=${port} is already in use on ${host}: stop the process listening there, or choose another HOOKLINE_PORT`;
      break;
    case 'EACCES':
      message = `HOOKLINE_PORT=${port} needs privileges on ${host} (ports below 1024 do): choose a HOOKLINE_PORT of 1024 or more`;
      break;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
      setting = 'HOOKLINE_HOST';
      message = `HOOKLINE_HOST=${host} does not resolve to an address (${code}): set it to an address or name of this machine, e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`;
      break;
    case 'EADDRNOTAVAIL':
      setting = 'HOOKLINE_HOST';
      message = `HOOKLINE_HOST=${host} is not an address of this machine: set it to one of its addresses, e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`;
      break;
    default:
      message = `cannot listen on HOOKLINE_HOST=${host} HOOKLINE_PORT=${port}: ${(error as Error).message}`;
  }
  return new HooklineError('HOOKLINE_ERR_STARTUP', message, { cause: error, details: [{ path: setting, message }] });
}
