import { parseArgs } from 'node:util';
import { z } from 'zod';
import { parseByteSize, parseDuration } from '../config/duration.js';
import { environmentSetting } from '../config/settings.js';
import { customHeaders } from '../http/schemas.js';
import { decodeSecret, decodeVerifierSecret } from '../signing/secret.js';
import type { CliCommand } from './command.js';
import { wantsHelp } from './command.js';
import type { CliIo } from './io.js';

/** The flags a command accepts, as `node:util` parseArgs declares them. */
export type FlagSpec = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

export type ParsedArgs<T> = { ok: true; value: T } | { ok: false; exitCode: 2 };

/**
 * Parses `args` against `flags`, then validates the values (and the positionals, under the key
 * `positionals`) with `schema`. On any problem it prints what is wrong, flag by flag, and how to get
 * the usage, and returns exit code 2: the caller returns it as it is.
 */
export function parseCommandArgs<S extends z.ZodType>(io: CliIo, command: string, args: readonly string[], flags: FlagSpec, schema: S): ParsedArgs<z.output<S>> {
  let raw: { values: Record<string, unknown>; positionals: string[] };
  try {
    raw = parseArgs({ args: [...args], options: flags, strict: true, allowPositionals: true }) as typeof raw;
  } catch (error) {
    return { ok: false, exitCode: usageProblem(io, command, [(error as Error).message.split('. To specify')[0] ?? 'bad arguments']) };
  }
  const result = schema.safeParse({ ...raw.values, positionals: raw.positionals });
  if (result.success) return { ok: true, value: result.data };
  const problems = result.error.issues.map((issue) => {
    const name = issue.path[0];
    return name === undefined || name === 'positionals' || namesItsSetting(issue) ? issue.message : `--${String(name)}: ${issue.message}`;
  });
  // A missing setting whose message says how to get it needs no pointer to the usage.
  if (result.error.issues.every(namesItsSetting)) {
    io.stderr.write(problems.map((problem) => `hookline ${command}: ${problem}\n`).join(''));
    return { ok: false, exitCode: 2 };
  }
  return { ok: false, exitCode: usageProblem(io, command, problems) };
}

/** An issue whose message names the setting itself (a flag or an environment variable) and what to do. */
function namesItsSetting(issue: z.core.$ZodIssue): boolean {
  return issue.code === 'custom' && (issue.params as { namesItsSetting?: boolean } | undefined)?.namesItsSetting === true;
}

/** Prints problems and where to find the usage; returns 2, the exit code of a usage error. */
export function usageProblem(io: CliIo, command: string, problems: readonly string[]): 2 {
  io.stderr.write(`${problems.map((problem) => `hookline ${command}: ${problem}`).join('\n')}\nRun "hookline ${command} --help" for usage.\n`);
  return 2;
}

/** The `positionals` of a command that takes none. */
export const NO_POSITIONALS = z.array(z.string()).max(0, 'takes no positional arguments');

/** A flag given as text that must be present. */
export function requiredText(hint: string) {
  return z.string({ error: `is required: ${hint}` }).min(1, `must not be empty: ${hint}`);
}

/** One `whsec_…` secret, from `--secret` or else `envValue` (WEBHOOK_SECRET): `secretsFlag` of one value. */
export function secretFlag(envValue: string | undefined, whereToGetIt: string, use: SecretUse = 'sign') {
  return z
    .string()
    .optional()
    .transform((flag) => (flag === undefined ? undefined : [flag]))
    .pipe(secretsFlag(envValue, whereToGetIt, use))
    .transform(([secret]) => secret!);
}

/**
 * `--secret`, repeatable (declared `multiple`), else `envValue` (WEBHOOK_SECRET) alone: the secrets
 * in the order given. Every problem is one line naming where the value came from, and `whereToGetIt`
 * (the endpoint's secret: the curl that shows it). An empty value is the usual sign of a
 * `$(curl …)` that failed, so it is told apart from none.
 */
export function secretsFlag(envValue: string | undefined, whereToGetIt: string, use: SecretUse = 'sign') {
  return z
    .array(z.string())
    .optional()
    .transform((flags, context) => {
      const given: Array<[string | undefined, string]> = flags && flags.length > 0 ? flags.map((flag) => [flag, '--secret']) : [[envValue, 'WEBHOOK_SECRET']];
      const problems = given.map(([value, source]) => secretProblem(value, source, use)).filter((problem) => problem !== null);
      if (problems.length === 0) return given.map(([value]) => value!);
      for (const problem of problems) context.addIssue({ code: 'custom', message: `${problem}; ${whereToGetIt}`, params: { namesItsSetting: true } });
      return z.NEVER;
    });
}

/**
 * What a secret is for: `sign` (a tool that signs deliveries takes it as Hookline does, `whsec_` and
 * padded base64), or `verify` (a receiver reads it as the SDK's verifier and the Standard Webhooks
 * libraries do: the prefix and the padding optional).
 */
type SecretUse = 'sign' | 'verify';

/** What is wrong with a secret taken from `source`, or null. An empty one is the usual sign of a `$(curl …)` that failed. */
function secretProblem(value: string | undefined, source: string, use: SecretUse): string | null {
  if (value === undefined) return 'no secret: pass --secret whsec_… or set WEBHOOK_SECRET';
  if (value.trim() === '') return `${source} is empty: it must be the "whsec_…" secret`;
  if (use === 'sign' && decodeSecret(value) === null) return `${source} is not a secret: it must be "whsec_" followed by base64`;
  if (use === 'verify' && decodeVerifierSecret(value) === null) return `${source} is not a secret: it must be base64, "whsec_" before it or not`;
  return null;
}

/**
 * `--header "Name: value"`, repeatable (declared `multiple`): custom headers such as a webhook's
 * `headers`, which real deliveries carry, checked by the rules the API applies to those.
 */
export const headerFlag = z
  .array(z.string())
  .optional()
  .transform((lines, context) => {
    const headers: Record<string, string> = {};
    for (const line of lines ?? []) {
      const colon = line.indexOf(':');
      if (colon <= 0) {
        context.addIssue({ code: 'custom', message: `must be "Name: value" (got ${JSON.stringify(line)})` });
        return z.NEVER;
      }
      const name = line.slice(0, colon).trim();
      // Told apart here: a record keeps one value per exact name, so the API's check cannot see it.
      if (Object.hasOwn(headers, name)) {
        context.addIssue({ code: 'custom', message: `${name}: given twice (header names are case-insensitive)` });
        return z.NEVER;
      }
      headers[name] = line.slice(colon + 1).trim();
    }
    const checked = customHeaders.safeParse(headers);
    if (checked.success) return checked.data;
    for (const issue of checked.error.issues) context.addIssue({ code: 'custom', message: issue.path.length > 0 ? `${String(issue.path[0])}: ${issue.message}` : issue.message });
    return z.NEVER;
  });

/**
 * The API a command talks to unless told otherwise: HOOKLINE_URL, else where `hookline serve` listens
 * by this environment (HOOKLINE_HOST, HOOKLINE_PORT; a wildcard host is reached on 127.0.0.1).
 */
export function defaultApiUrl(env: CliIo['env']): string {
  return env.HOOKLINE_URL || listenApiUrl(env);
}

/** Where `hookline serve` listens by `env`, as a client on this machine reaches it. */
function listenApiUrl(env: CliIo['env']): string {
  const host = !env.HOOKLINE_HOST || env.HOOKLINE_HOST === '0.0.0.0' || env.HOOKLINE_HOST === '::' ? '127.0.0.1' : env.HOOKLINE_HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${env.HOOKLINE_PORT || '8080'}`;
}

/**
 * An address for the hint of a bad `--url`: the environment's default when it is a URL itself,
 * else where `hookline serve` listens by `env` (never the bad value).
 */
export function exampleApiUrl(env: CliIo['env']): string {
  const fallback = defaultApiUrl(env);
  return isHttpUrl(fallback) ? fallback : listenApiUrl(env);
}

/** Where a Hookline endpoint's secret comes from, for the messages of `secretFlag`: the curl that shows it, asking the API at `apiUrl`. */
export function endpointSecretHint(apiUrl: string): string {
  return `the endpoint's secret is shown by curl -s ${apiUrl.replace(/\/+$/, '')}/v1/webhook/secret -H "authorization: Bearer $HOOKLINE_API_KEY"`;
}

/** An integer flag within [min, max], with a default when absent. */
export function integerFlag(min: number, max: number, fallback: number, what: string) {
  return z
    .string()
    .optional()
    .transform((text, context) => {
      if (text === undefined) return fallback;
      const value = Number(text);
      if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
        context.addIssue({ code: 'custom', message: `must be ${what}, an integer from ${min} to ${max} (got ${JSON.stringify(text)})` });
        return z.NEVER;
      }
      return value;
    });
}

/** A positive number flag (e.g. a rate), with a default when absent. */
export function positiveNumberFlag(max: number, fallback: number, what: string) {
  return z
    .string()
    .optional()
    .transform((text, context) => {
      if (text === undefined) return fallback;
      const value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value) || value <= 0 || value > max) {
        context.addIssue({ code: 'custom', message: `must be ${what}, a number above 0 and at most ${max} (got ${JSON.stringify(text)})` });
        return z.NEVER;
      }
      return value;
    });
}

/** A flag parsed by one of the settings parsers (`5s`, `1mb`), with a default when absent. */
function parsedFlag(parse: (text: string) => number, fallback: number, min: number) {
  return z
    .string()
    .optional()
    .transform((text, context) => {
      if (text === undefined) return fallback;
      try {
        const value = parse(text);
        if (value >= min) return value;
        context.addIssue({ code: 'custom', message: `must be at least ${min} (got ${JSON.stringify(text)})` });
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
      }
      return z.NEVER;
    });
}

/** A duration such as `500ms`, `15s`, `2m`, in milliseconds. */
export const durationFlag = (fallback: number, min = 1) => parsedFlag(parseDuration, fallback, min);

/**
 * `--timeout` of a tool that sends deliveries: by default HOOKLINE_DELIVERY_TIMEOUT from `env`, read
 * as `hookline serve` reads it (15 s when unset), so a receiver gets the time real deliveries give it.
 */
export function deliveryTimeoutFlag(env: Readonly<Record<string, string | undefined>>) {
  const configured = environmentSetting('HOOKLINE_DELIVERY_TIMEOUT', env);
  return z
    .string()
    .optional()
    .superRefine((text, context) => {
      if (text === undefined && !configured.ok) context.addIssue({ code: 'custom', message: `${configured.problem}; fix it, or pass --timeout`, params: { namesItsSetting: true } });
    })
    .pipe(durationFlag(configured.ok ? configured.value : 0));
}

/** A size such as `64kb`, `1mb`, in bytes. */
export const byteSizeFlag = (fallback: number, min = 1) => parsedFlag(parseByteSize, fallback, min);

/** An absolute http(s) URL. */
export function urlFlag(hint: string) {
  return requiredText(hint).refine(isHttpUrl, `must be an absolute http:// or https:// URL: ${hint}`);
}

/** Whether `text` is an absolute http(s) URL. */
export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Writes the command's help to stdout when asked; true when it did. */
export function printedHelp(io: CliIo, args: readonly string[], help: string): boolean {
  if (!wantsHelp(args)) return false;
  io.stdout.write(`${help}\n`);
  return true;
}

/** Parses and validates `args` (see `parseCommandArgs`) and runs `run` on the values; on a usage problem, 2 without running. */
export async function runParsed<S extends z.ZodType>(io: CliIo, command: string, args: readonly string[], flags: FlagSpec, schema: S, run: (options: z.output<S>) => Promise<number>): Promise<number> {
  const parsed = parseCommandArgs(io, command, args, flags, schema);
  return parsed.ok ? run(parsed.value) : parsed.exitCode;
}

/** A command that prints `help` on `--help`/`-h` (exit 0) and otherwise runs `run` on its arguments. */
export function commandWithHelp(io: CliIo, command: Omit<CliCommand, 'run'>, run: (args: readonly string[]) => Promise<number>): CliCommand {
  return {
    ...command,
    async run(args) {
      return printedHelp(io, args, command.help) ? 0 : run(args);
    },
  };
}

/** What a command states itself; `defineCommand` adds the help, the parsing and the usage errors. */
export interface CommandDefinition<S extends z.ZodType> extends Omit<CliCommand, 'run'> {
  flags: FlagSpec;
  /** Made afresh for each run, so its defaults read the environment and the clock of that run. */
  schema(): S;
  /** Runs on the validated flags (and, under `positionals`, the positional arguments). */
  run(options: z.output<S>): Promise<number>;
}

/** A command with `--help`, flags parsed and validated against `schema`, and exit code 2 on a usage problem. */
export function defineCommand<S extends z.ZodType>(io: CliIo, { flags, schema, run, ...command }: CommandDefinition<S>): CliCommand {
  return commandWithHelp(io, command, (args) => runParsed(io, command.name, args, flags, schema(), run));
}
