import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Compares the replicas of a JetStream stream as each NATS server stored them, from the servers'
 * file stores (a run kept with `--keep`, its servers stopped). A replicated stream's servers must
 * hold the same message at each sequence; one that holds another is a fault of NATS: a consumer
 * whose leader reads that replica hands out the other message under the sequence, and the ack of
 * it acknowledges the message the stream's quorum holds there, never delivered (finding 3).
 */

/** One stored message as its replica holds it. */
export interface StoredMessage {
  subject: string;
  /** The `Nats-Msg-Id` header, when it has one. */
  msgId: string | null;
  /** SHA-256 of the headers and payload, hex: what two replicas' copies are compared by. */
  digest: string;
}

/** A sequence at which the replicas disagree: each server's message there (null: it has none). */
export interface Divergence {
  seq: number;
  copies: Record<string, StoredMessage | null>;
}

const HEADERS_BIT = 0x8000_0000;
const ERASED_BIT = 1n << 63n;
/** rl (4), seq (8), ts (8), subject length (2). */
const RECORD_HEADER_BYTES = 22;
const HASH_BYTES = 8;

/**
 * The messages of one message block (`msgs/N.blk`) of nats-server 2.9's file store, uncompressed
 * and unencrypted: each record is its length (its top bit: it has headers), its sequence (top bit:
 * erased), its time, its subject's length and subject, the headers' length and headers when it has
 * them, the payload and an 8-byte hash. Erased records are left out; a torn last record ends it.
 */
export function parseMessageBlock(block: Buffer): Map<number, StoredMessage> {
  const messages = new Map<number, StoredMessage>();
  let at = 0;
  while (at + RECORD_HEADER_BYTES <= block.length) {
    const word = block.readUInt32LE(at);
    const length = word & ~HEADERS_BIT;
    if (length < RECORD_HEADER_BYTES + HASH_BYTES || at + length > block.length) break;
    const rawSeq = block.readBigUInt64LE(at + 4);
    const subjectLength = block.readUInt16LE(at + 20);
    const subject = block.toString('utf8', at + RECORD_HEADER_BYTES, at + RECORD_HEADER_BYTES + subjectLength);
    const body = block.subarray(at + RECORD_HEADER_BYTES + subjectLength, at + length - HASH_BYTES);
    let msgId: string | null = null;
    if ((word & HEADERS_BIT) !== 0 && body.length >= 4) {
      const headers = body.toString('utf8', 4, 4 + body.readUInt32LE(0));
      msgId = /^Nats-Msg-Id:\s*(.+?)\r?$/im.exec(headers)?.[1] ?? null;
    }
    if ((rawSeq & ERASED_BIT) === 0n) messages.set(Number(rawSeq), { subject, msgId, digest: createHash('sha256').update(body).digest('hex') });
    at += length;
  }
  return messages;
}

/** Every message of `stream` in one server's JetStream store directory (`store_dir`), by sequence. */
export function readReplica(storeDir: string, stream: string, account = '$G'): Map<number, StoredMessage> {
  const dir = join(storeDir, 'jetstream', account, 'streams', stream, 'msgs');
  const messages = new Map<number, StoredMessage>();
  if (!existsSync(dir)) return messages;
  const blocks = readdirSync(dir).filter((name) => name.endsWith('.blk')).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  for (const name of blocks) for (const [seq, message] of parseMessageBlock(readFileSync(join(dir, name)))) messages.set(seq, message);
  return messages;
}

/** The highest sequence a replica holds, 0 when none (a loop: a spread of a long stream's keys overflows the stack). */
export function lastSeq(messages: Map<number, StoredMessage>): number {
  let last = 0;
  for (const seq of messages.keys()) if (seq > last) last = seq;
  return last;
}

/**
 * Each server's replica of `stream` under a run's NATS directory (`store-<server>` each, as
 * nats-cluster.ts lays them out), by server name.
 */
export function readStreamReplicas(natsDir: string, stream: string): Record<string, Map<number, StoredMessage>> {
  const stores = readdirSync(natsDir).filter((name) => name.startsWith('store-')).sort();
  return Object.fromEntries(stores.map((store) => [store.slice('store-'.length), readReplica(join(natsDir, store), stream)]));
}

/**
 * The sequences, up to the last one every replica holds, at which two replicas hold different
 * messages or one holds none. A replica that is only behind (its last sequence lower) is not
 * divergent past its end: it has not caught up yet. With `missingIsDeleted` (a stream that purges,
 * as the changelog does), a sequence one replica no longer holds is not divergent: its block may
 * have been compacted there and not elsewhere; only two different messages at a sequence are.
 */
export function divergences(replicas: Record<string, Map<number, StoredMessage>>, { missingIsDeleted = false } = {}): Divergence[] {
  const servers = Object.keys(replicas);
  if (servers.length < 2) return [];
  const lastHeldByAll = Math.min(...servers.map((server) => lastSeq(replicas[server]!)));
  const seqs = new Set<number>();
  for (const server of servers) for (const seq of replicas[server]!.keys()) if (seq <= lastHeldByAll) seqs.add(seq);
  const found: Divergence[] = [];
  for (const seq of [...seqs].sort((a, b) => a - b)) {
    const copies = Object.fromEntries(servers.map((server) => [server, replicas[server]!.get(seq) ?? null]));
    const digests = new Set(Object.values(copies).flatMap((copy) => (copy ? [copy.digest] : missingIsDeleted ? [] : [null])));
    if (digests.size > 1) found.push({ seq, copies });
  }
  return found;
}
