/**
 * Every object a client method takes is checked against the keys it knows before anything is sent:
 * a misspelt or unsupported option (`dryrun`, `timeout`) would otherwise be dropped silently and
 * the call would do something other than what was asked (a real redrive instead of a dry run).
 */

/** The keys a method accepts in one argument, exhaustive by type: `satisfies KnownKeys<T>` fails when T gains a key. */
export type KnownKeys<T> = Record<keyof T, true>;

/**
 * Throws a `TypeError` naming the method, the argument and the keys it accepts when `value` is not
 * an object or has a key outside `known`. Keys whose value is `undefined` count as given.
 */
export function assertKnownKeys(method: string, argument: string, value: unknown, known: Readonly<Record<string, true>>): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`HooklineClient.${method}: ${argument} must be an object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  }
  const unknown = Object.keys(value).filter((key) => !Object.hasOwn(known, key));
  if (unknown.length === 0) return;
  const names = unknown.map((key) => JSON.stringify(key)).join(', ');
  throw new TypeError(`HooklineClient.${method}: unknown ${unknown.length === 1 ? 'option' : 'options'} ${names} in ${argument}; it accepts ${Object.keys(known).join(', ')}`);
}
