/** How deep parsed JSON nests, asked before code that recurses over it (JSON.stringify, rule checks) meets it. */

/**
 * Whether the object or array `container` nests at most `levels` deep (itself one). Recursive, but
 * never more than `levels` calls deep whatever the input, and it allocates nothing: every event
 * passes through it.
 */
export function nestsAtMost(container: object, levels: number): boolean {
  if (levels === 0) return false;
  if (Array.isArray(container)) {
    for (const member of container) if (member !== null && typeof member === 'object' && !nestsAtMost(member, levels - 1)) return false;
    return true;
  }
  for (const key in container) {
    const member = (container as Record<string, unknown>)[key];
    if (member !== null && typeof member === 'object' && !nestsAtMost(member, levels - 1)) return false;
  }
  return true;
}
