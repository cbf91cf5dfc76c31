import { DeliverPolicy } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager, JsMsg, StoredMsg } from '@nats-io/jetstream';
import { unpack } from 'msgpackr';
import { RECORDS_PER_TURN, visitBatch, visitEntries, type ChangelogRecord } from './changelog-entries.js';
import { retrying } from '../transport/nats-streams.js';

/** Last tokens of a partition's subjects (none a kind token of the old format): batches, snapshots, markers. */
export const LOG_TOKEN = 'log';
export const SNAPSHOT_TOKEN = 'snap';
export const MARKER_TOKEN = 'snapped';

/** Where a partition's snapshot lies (a marker's message, msgpack). */
export interface SnapshotMarker {
  /** Sequences of the snapshot's first and last message (both 0: an empty snapshot). */
  from: number;
  to: number;
  /** Sequence of the last batch folded into it: a restore reads the batches after it. */
  covers: number;
}

/** A marker as read back, with the sequence of its message (the next marker is conditional on it). */
export interface StoredMarker {
  sequence: number;
  marker: SnapshotMarker;
}

/** Where a read of a partition's changelog ended. */
export interface PartitionRead {
  /** Sequence of the partition's last batch (0: none). */
  lastBatch: number;
  /** Entries of the batches read after the snapshot. */
  entriesAfterSnapshot: number;
  /** Records in the snapshot read. */
  snapshotEntries: number;
  marker: StoredMarker | null;
}

/**
 * Bytes a read may have in flight, counted as messages of the server's max_payload. Unbounded, a
 * pull of a hundred 1 MB batches put more than the server's 64 MB of pending output to one client in
 * flight; a busy reader was then cut off as a slow consumer and its read waited for ever (the server
 * counted every message delivered, the reader had half). Bounded in bytes (`max_bytes`), a pull
 * whose room left was smaller than the next message ended in a 409 ("message size exceeds
 * maxbytes"), on which the client waits for missed heartbeats: 15 s each time (a restore of 13 MB of
 * 1 MB batches took 15.8 s, 0.2 s counted in messages). Kept at 8 MB: the read shares the node's
 * connection, and 32 MB queued ahead of other answers held them past their 5 s timeouts while a
 * partition of 200,000 deliveries was restored (bench:takeover).
 */
const READ_BYTES_IN_FLIGHT = 8 * 1024 * 1024;

/**
 * How long a read that has not reached the sequence it must may go without a message before it
 * fails (the takeover then backs off and tries again, with a new consumer).
 */
const READ_STALL_MS = 10_000;

/** A visitor of batch messages that keeps `state` (the last batch, the entries after the snapshot). */
function batchReader(state: PartitionRead, visit: (change: ChangelogRecord) => void): (message: JsMsg) => number {
  return (message) => {
    const entries = visitBatch(message.data, visit);
    state.entriesAfterSnapshot += entries;
    state.lastBatch = message.seq;
    return entries;
  };
}

/** Reads a partition's changelog back: its last snapshot marker, and its entries in the order they lie over each other. */
export class ChangelogReader {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: () => Promise<JetStreamManager>,
    private readonly stream: string,
    private readonly subjectPrefix: string,
    /** The server's max_payload: the largest message a read may meet. */
    private readonly maxPayload: () => number,
  ) {}

  /** `<prefix>.<partition>.<token>`: where a partition's batches, snapshots and markers go. */
  subjectOf(partition: number, token: string): string {
    return `${this.subjectPrefix}.${partition}.${token}`;
  }

  /**
   * Hands `visit` every entry of the partition's last snapshot, then of the batches after the last
   * batch it covers, in that order: a later entry holds a newer version than an
   * earlier one of the same record (a batch stored while a snapshot was being written lies between
   * its messages, but the snapshot's subject is read first). `between` runs every RECORDS_PER_TURN
   * entries or so (a yield, or a chunk handed on).
   */
  async walk(partition: number, visit: (change: ChangelogRecord) => void, between: () => Promise<unknown>): Promise<PartitionRead> {
    const marker = await this.lastMarker(partition);
    const state: PartitionRead = { lastBatch: marker?.marker.covers ?? 0, entriesAfterSnapshot: 0, snapshotEntries: 0, marker };
    const batch = batchReader(state, visit);
    if (!marker) {
      // Every message of the partition: batches, and records in the format of earlier versions.
      await this.readMessages(`${this.subjectPrefix}.${partition}.>`, 1, Number.POSITIVE_INFINITY, (message) => {
        const tokens = message.subject.slice(this.subjectPrefix.length + 1).split('.');
        if (tokens[1] === LOG_TOKEN) return batch(message);
        // A snapshot left unfinished (it has no marker) is not read, nor is a marker.
        if (tokens[1] === SNAPSHOT_TOKEN || tokens[1] === MARKER_TOKEN) return 0;
        const entries = visitEntries([[tokens[1], tokens[2], unpack(message.data)]], visit);
        state.entriesAfterSnapshot += entries;
        return entries;
      }, between);
    } else {
      if (marker.marker.to > 0) {
        // Read through its last message: the marker, read from the stream's leader, names it.
        await this.readMessages(this.subjectOf(partition, SNAPSHOT_TOKEN), marker.marker.from, marker.marker.to, (message) => {
          const entries = visitBatch(message.data, visit);
          state.snapshotEntries += entries;
          return entries;
        }, between, marker.marker.to);
      }
      await this.readMessages(this.subjectOf(partition, LOG_TOKEN), marker.marker.covers + 1, Number.POSITIVE_INFINITY, batch, between);
    }
    return state;
  }

  /**
   * Reads on from where `state` stands through the batch at `upTo` (a sequence the stream's leader
   * gave), handing `visit` their entries; fails when the read does not get there (READ_STALL_MS).
   */
  async readBatchesThrough(partition: number, state: PartitionRead, upTo: number, visit: (change: ChangelogRecord) => void, between: () => Promise<unknown>): Promise<void> {
    if (upTo <= state.lastBatch) return;
    await this.readMessages(this.subjectOf(partition, LOG_TOKEN), state.lastBatch + 1, Number.POSITIVE_INFINITY, batchReader(state, visit), between, upTo);
  }

  /**
   * Sequence of the partition's last batch (0: none), as the stream's leader answers it (a message
   * get is answered by the leader; a consumer may be served by a replica that is behind).
   */
  async lastBatchSequence(partition: number): Promise<number> {
    return (await this.lastBatch(partition))?.seq ?? 0;
  }

  /** The partition's last batch as the stream's leader has it (null: none), with its headers. */
  async lastBatch(partition: number): Promise<StoredMsg | null> {
    const jsm = await this.jsm();
    return retrying(`reading partition ${partition}'s last batch`, () => jsm.streams.getMessage(this.stream, { last_by_subj: this.subjectOf(partition, LOG_TOKEN) }), undefined);
  }

  /**
   * Hands `visit` the messages on `filter` from sequence `from` up to `to` (or the last), in order;
   * `visit` answers how many records a message held.
   * A read from a start sequence through a subject wildcard was seen (NATS 2.9) to count a message
   * still pending at the partition's last one, and to wait for it for ever: only single subjects are
   * read from a start sequence.
   *
   * The read ends once the consumer has nothing pending, and not before it has met sequence `reach`:
   * the consumer's count is its replica's, and a replica may be behind the stream's leader (a
   * server cut off from its peers, just back); the read waits for it to catch up, and fails after
   * READ_STALL_MS without a message.
   */
  private async readMessages(filter: string, from: number, to: number, visit: (message: JsMsg) => number, between: () => Promise<unknown>, reach = 0): Promise<void> {
    // Nothing read yet: retried on what an election answers, as the snapshot marker's read is.
    const { consumer, pending } = await retrying(`reading the changelog's ${filter}`, async () => {
      const made = await this.js.consumers.get(this.stream, { filter_subjects: filter, ...(from > 1 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from } : { deliver_policy: DeliverPolicy.All }) });
      return { consumer: made, pending: (await made.info()).num_pending };
    }, undefined);
    if (pending === 0 && reach < from) return;
    const messages = await consumer.consume({ max_messages: Math.max(2, Math.floor(READ_BYTES_IN_FLIGHT / this.maxPayload())) });
    let lastSeen = from - 1;
    let stalled = false;
    let stall: NodeJS.Timeout | undefined;
    // Armed only while the read waits for a message it must reach: never over `between` (a slow
    // disk holds a restore's chunks back), nor for a read that may end where its replica does.
    const watch = (): void => {
      clearTimeout(stall);
      if (lastSeen >= reach) return;
      stall = setTimeout(() => {
        stalled = true;
        messages.stop();
      }, READ_STALL_MS);
    };
    // Stopped however the read ends: an ordered consumer left running recreates itself on the
    // server each time its heartbeats go missing.
    try {
      watch();
      // The messages of a pull (up to 8 MB) come in one turn of the event loop: the read yields
      // after every RECORDS_PER_TURN records (a restore's longest stall in bench:changelog fell from
      // 240-290 ms to about 140).
      let recordsThisTurn = 0;
      for await (const message of messages) {
        if (message.seq > to) break;
        lastSeen = message.seq;
        watch();
        recordsThisTurn += visit(message);
        if ((message.info.pending === 0 && message.seq >= reach) || message.seq === to) break;
        if (recordsThisTurn >= RECORDS_PER_TURN) {
          recordsThisTurn = 0;
          clearTimeout(stall);
          await between();
          watch();
        }
      }
    } finally {
      clearTimeout(stall);
      messages.stop();
    }
    if (lastSeen < reach) {
      throw new Error(`reading the changelog's ${filter}: the read ${stalled ? `stalled for ${READ_STALL_MS / 1000} s` : 'ended'} at sequence ${lastSeen}, short of ${reach}, which the stream's leader holds (its replica serving the read is behind)`);
    }
  }

  /** The partition's last snapshot marker, or null when it has none (a failed read throws: never "none"). */
  async lastMarker(partition: number): Promise<StoredMarker | null> {
    // Retried on what an election answers (10008, a timeout), as a start's steps are: failing at once
    // gave the takeover up for a backoff (npm run nemesis, seed 5: 15 takeovers within a second).
    const jsm = await this.jsm();
    const message = await retrying(`reading partition ${partition}'s snapshot marker`, () => jsm.streams.getMessage(this.stream, { last_by_subj: this.subjectOf(partition, MARKER_TOKEN) }), undefined);
    return message ? { sequence: message.seq, marker: unpack(message.data) as SnapshotMarker } : null;
  }
}
