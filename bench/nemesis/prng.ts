/**
 * A small seeded PRNG (mulberry32): the same seed gives the same numbers on every machine and Node
 * version, so a nemesis schedule is reproduced from its seed alone. Not for anything secret.
 */
export interface Prng {
  /** A number in [0, 1). */
  next(): number;
  /** A whole number in [min, max]. */
  int(min: number, max: number): number;
  /** One of `items`, each as likely as its weight (all 1 when no weights are given). */
  pick<T>(items: readonly T[], weights?: readonly number[]): T;
}

export function seededPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick(items, weights) {
      if (items.length === 0) throw new Error('pick from nothing');
      const each = weights ?? items.map(() => 1);
      let left = next() * each.reduce((sum, weight) => sum + weight, 0);
      for (let index = 0; index < items.length; index++) {
        left -= each[index]!;
        if (left < 0) return items[index]!;
      }
      return items[items.length - 1]!;
    },
  };
}
