import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionRpc } from '../../src/cluster/rpc.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';

/** Forwarded API calls (src/cluster/rpc.ts) over the real NATS: what the caller gets when the owner fails. */
describe('partition rpc', () => {
  let owner: NatsConnection;
  let caller: NatsConnection;
  beforeAll(async () => {
    owner = await connect({ servers: SHARED_NATS_URL });
    caller = await connect({ servers: SHARED_NATS_URL });
  });
  afterAll(async () => {
    await owner.close();
    await caller.close();
  });

  it('a call that fails on the owning node answers 500 naming the node and the reqId of the line it logged', async () => {
    const prefix = `test.rpc.${randomBytes(4).toString('hex')}`;
    const logged: Array<{ fields: Record<string, unknown>; message: string | undefined }> = [];
    const logger = { error: (fields: object, message?: string) => void logged.push({ fields: fields as Record<string, unknown>, message }) };
    const serving = new PartitionRpc(owner, prefix, () => Promise.reject(new Error('the handler broke')), 'node-a', logger);
    const calling = new PartitionRpc(caller, prefix, () => Promise.reject(new Error('unused')), 'node-b', logger);
    serving.serve(3);
    try {
      await owner.flush();
      const reply = await calling.forward(3, { method: 'GET', url: '/v1/webhook', headers: {}, body: null }, 5_000);
      expect(reply.statusCode).toBe(500);
      const { error } = JSON.parse(reply.body) as { error: { code: string; message: string; details: Array<{ reqId: string }> } };
      expect(error.code).toBe('internal_error');
      expect(logged).toHaveLength(1);
      const reqId = logged[0]!.fields.reqId as string;
      expect(logged[0]!.message).toBe('a forwarded API call failed on this node (GET /v1/webhook)');
      expect((logged[0]!.fields.err as Error).message).toBe('the handler broke');
      expect(error.message).toBe(`internal error; the log of node node-a (the partition's owner) has the details under reqId ${reqId}`);
      expect(error.details[0]!.reqId).toBe(reqId);

      // A message that is no forwarded call is answered and logged the same way; the owner carries on.
      const garbled = await caller.request(`${prefix}.3`, new TextEncoder().encode('{not json'), { timeout: 5_000 });
      expect((JSON.parse(new TextDecoder().decode(garbled.data)) as { statusCode: number }).statusCode).toBe(500);
      expect(logged.map((line) => line.message)).toEqual(['a forwarded API call failed on this node (GET /v1/webhook)', 'a forwarded API call could not be read']);
    } finally {
      serving.close();
      calling.close();
    }
  });
});
