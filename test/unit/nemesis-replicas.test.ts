import { describe, expect, it } from 'vitest';
import { divergences, parseMessageBlock } from '../../bench/nemesis/replicas.js';

/** One record of a nats-server 2.9 message block, as its file store writes it. */
function record(seq: number, subject: string, msgId: string, payload: string, { erased = false } = {}): Buffer {
  const headers = Buffer.from(`NATS/1.0\r\nNats-Msg-Id: ${msgId}\r\n\r\n`);
  const body = Buffer.concat([Buffer.alloc(4), headers, Buffer.from(payload)]);
  body.writeUInt32LE(headers.length, 0);
  const length = 22 + subject.length + body.length + 8;
  const head = Buffer.alloc(22);
  head.writeUInt32LE((length | 0x8000_0000) >>> 0, 0);
  head.writeBigUInt64LE(BigInt(seq) | (erased ? 1n << 63n : 0n), 4);
  head.writeBigInt64LE(1n, 12);
  head.writeUInt16LE(subject.length, 20);
  return Buffer.concat([head, Buffer.from(subject), body, Buffer.alloc(8)]);
}

describe('stream replicas (npm run nemesis:replicas)', () => {
  it('reads each record of a block: subject, Nats-Msg-Id, erased ones left out, a torn tail ignored', () => {
    const block = Buffer.concat([record(1, 'hookline.events.10.p', 'evt_1', '{}'), record(2, 'hookline.events.3.q', 'evt_2', '{"a":1}', { erased: true }), record(3, 'hookline.events.3.q', 'evt_3', '{}')]);
    const messages = parseMessageBlock(Buffer.concat([block, Buffer.from([1, 2, 3])]));
    expect([...messages.keys()]).toEqual([1, 3]);
    expect(messages.get(1)).toMatchObject({ subject: 'hookline.events.10.p', msgId: 'evt_1' });
    expect(messages.get(3)?.msgId).toBe('evt_3');
  });

  it("finds a replica that kept another message at a sequence (finding 3: n1's seq 147), not one that is only behind", () => {
    const quorum = parseMessageBlock(Buffer.concat([record(146, 's.10.p', 'evt_145', '{}'), record(147, 's.10.p', 'evt_195', '{}'), record(148, 's.2.q', 'evt_331', '{}')]));
    const stale = parseMessageBlock(Buffer.concat([record(146, 's.10.p', 'evt_145', '{}'), record(147, 's.10.p', 'evt_146', '{}')]));
    const found = divergences({ n1: stale, n2: quorum, n3: quorum });
    expect(found.map(({ seq }) => seq)).toEqual([147]);
    expect(found[0]!.copies.n1?.msgId).toBe('evt_146');
    expect(found[0]!.copies.n2?.msgId).toBe('evt_195');
    expect(divergences({ n1: parseMessageBlock(record(146, 's.10.p', 'evt_145', '{}')), n2: quorum })).toEqual([]);
  });
});
