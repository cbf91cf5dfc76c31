import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/actors/engine.js';

/** Stored projects keep the SHA-256 (hex) of each API key: the hash must never change, or every key stops opening its project. */
describe('hashApiKey', () => {
  it('is the hex SHA-256 of the key as UTF-8', () => {
    expect(hashApiKey('hk_test')).toBe('63ef7dbe87637cad24f00e2c33091e3600a403b2641eca95c1ba2593270afc44');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (key) => {
        expect(hashApiKey(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
      }),
      { seed: 2611, numRuns: 300 },
    );
  });
});
