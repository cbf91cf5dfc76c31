import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildExchange } from '../../src/fuzz/build.js';
import { caseFileText, parseCaseFile, replayContext } from '../../src/fuzz/case-file.js';
import { CASE_KINDS, caseArbitrary } from '../../src/fuzz/cases.js';
import { refusedEverything } from '../../src/fuzz/diagnose.js';
import { generateSecret } from '../../src/sdk/index.js';
import { decodeSecret } from '../../src/signing/secret.js';

const key = decodeSecret(generateSecret())!;

describe('a fuzz case file', () => {
  it('gives back the case it was written from, and the replay builds the same bodies, pieces and order (property)', () => {
    const anyCase = fc.constantFrom(...CASE_KINDS).chain((kind) => caseArbitrary(kind));
    fc.assert(
      fc.property(anyCase, (fuzzCase) => {
        const context = { key, webhookId: 'msg_x', nowSeconds: 1_790_000_000, toleranceSeconds: 300, maxBodyBytes: 8192, largestDeliveryBytes: 9216, customHeaders: {} };
        const exchange = buildExchange(fuzzCase, context);
        const text = caseFileText({ kind: fuzzCase.kind, target: 'http://127.0.0.1:9/', seed: 1, reason: 'r', answers: '400', fuzzCase, settings: { toleranceSeconds: 300, maxBodyBytes: 8192, expectDuplicate: '2xx', largestDeliveryBytes: 9216, customHeaders: {}, corpusEvent: null } }, exchange);
        const file = parseCaseFile(text);
        expect(file.fuzzCase).toEqual(fuzzCase);
        const again = buildExchange(file.fuzzCase, replayContext(file, key, 'msg_x', 1_790_000_000));
        expect(again).toEqual(exchange);
      }),
      { seed: 39, numRuns: 200 },
    );
  });

  it('is refused, saying why, when it is not one', () => {
    expect(() => parseCaseFile('{')).toThrow(/^not JSON/);
    expect(() => parseCaseFile('{"kind":"valid"}')).toThrow(/is not a hookline fuzz case file/);
  });
});

describe('the one cause of a run that accepted no correctly signed delivery', () => {
  it('is given exactly when some were answered and none got a 2xx (property)', () => {
    const answer = fc.record({ status: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }) });
    fc.assert(
      fc.property(fc.array(answer, { maxLength: 30 }), (answers) => {
        const accepted = answers.some((one) => one.status !== null && one.status >= 200 && one.status < 300);
        const answered = answers.some((one) => one.status !== null);
        expect(refusedEverything(answers) !== null).toBe(!accepted && answered);
      }),
      { seed: 39 },
    );
    expect(refusedEverything([{ status: 400 }, { status: 400 }])).toBe('no correctly signed delivery was accepted: check the secret; the receiver answered 400 to all 2');
    expect(refusedEverything([{ status: 400 }, { status: 401 }, { status: 400 }])).toBe('no correctly signed delivery was accepted: check the secret; the receiver answered 400×2, 401×1 to the 3');
  });
});
