import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { startTestHookline } from '../helpers/hookline.js';

/**
 * The HTTP boundary: what a request gets before or around its route (the log of unexpected
 * failures, keys and unknown routes checked before the body, bodies the routes do not take,
 * requests Node cannot parse), always in the error shape and as the OpenAPI document says.
 */

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
}

describe('unexpected failures', () => {
  it('a route throwing a plain Error answers 500 internal_error and logs the error once, at error, with the request id', async () => {
    const lines: Array<Record<string, any>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const hookline = await startTestHookline({}, { logger });
    vi.spyOn(hookline.node.engine, 'readDelivery').mockImplementation(() => {
      throw new Error('the disk is on fire');
    });

    expectError(await hookline.api('GET', '/v1/logs/webhook-deliveries/dlv_any'), 500, 'internal_error');

    const errors = lines.filter((line) => line.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ level: 50, reqId: expect.any(String), err: { message: 'the disk is on fire' } });
  });
});
