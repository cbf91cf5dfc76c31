/** The same JSON value with every object's keys in a shuffled order (seeded by `seed`). */
export function reordered(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, index) => reordered(item, seed + index));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  const shuffled = keys.map((key, index) => ({ key, rank: Math.sin(seed * 31 + index * 17) })).sort((a, b) => a.rank - b.rank);
  return Object.fromEntries(shuffled.map(({ key }, index) => [key, reordered((value as Record<string, unknown>)[key], seed + index + 1)]));
}
