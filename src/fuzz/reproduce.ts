/**
 * One failing request, reproduced alone: a `curl` command that sends exactly its headers and bytes,
 * and (with `--save-failures DIR`) the request saved as files, so a receiver's author can send it
 * again under a debugger without running the fuzzer.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FuzzRequest } from './build.js';

/** Bodies up to this size are written into the curl command itself; larger ones need the saved file. */
const INLINE_BODY_BYTES = 2048;

/** `text` as one single-quoted shell word. */
export const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** Whether the bytes survive a trip through a shell string: valid UTF-8, no NUL. */
const inlinable = (body: Uint8Array) => body.length <= INLINE_BODY_BYTES && !body.includes(0) && Buffer.from(Buffer.from(body).toString('utf8'), 'utf8').equals(body);

/**
 * The curl command for `request`: the body from `bodyFile` when given, else inline when it is small
 * and printable, else null (too large to show: save it with --save-failures).
 */
export function curlCommand(request: FuzzRequest, target: string, bodyFile?: string): string | null {
  const headers = Object.entries(request.headers).map(([name, value]) => `-H ${quote(`${name}: ${value}`)}`);
  if (request.transfer?.framing === 'chunked') headers.push(`-H 'transfer-encoding: chunked'`);
  const head = `curl -sS -o /dev/null -w '%{http_code}\\n' -X POST ${quote(target)} ${headers.join(' ')}`;
  if (bodyFile !== undefined) return `${head} --data-binary @${quote(bodyFile)}`;
  if (!inlinable(request.body)) return null;
  return `${head} --data-binary ${quote(Buffer.from(request.body).toString('utf8'))}`;
}

export interface SavedFailure {
  /** The request file (JSON: target, headers, body in base64, how it was written). */
  readonly requestFile: string;
  /** Each request's curl command, in the order to send them. */
  readonly curl: readonly string[];
}

/** Writes the requests of one failure as `<name>.json` and `<name>-<n>.body` under `dir`. */
export function saveFailure(dir: string, name: string, target: string, reason: string, requests: readonly FuzzRequest[]): SavedFailure {
  mkdirSync(dir, { recursive: true });
  const curl = requests.map((request, index) => {
    const bodyFile = join(dir, `${name}-${index + 1}.body`);
    writeFileSync(bodyFile, request.body);
    return curlCommand(request, target, bodyFile)!;
  });
  const requestFile = join(dir, `${name}.json`);
  const saved = {
    target,
    reason,
    requests: requests.map((request, index) => ({
      method: 'POST',
      headers: request.headers,
      bodyFile: `${name}-${index + 1}.body`,
      bodyBase64: Buffer.from(request.body).toString('base64'),
      framing: request.transfer?.framing ?? 'content-length',
      splits: request.transfer?.splits ?? [],
    })),
    curl,
  };
  writeFileSync(requestFile, `${JSON.stringify(saved, null, 2)}\n`);
  return { requestFile, curl };
}
