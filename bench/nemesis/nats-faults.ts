import type { Violation } from './checks.js';
import type { ProducedEvent } from './producers.js';
import { divergences, lastSeq, type Divergence, type StoredMessage } from './replicas.js';

/**
 * Faults of NATS found in a run, apart from Hookline's: the replicas of a stream that hold different
 * messages at a sequence (replicas.ts, read from the servers' stores once they are stopped). A
 * consumer whose leader reads such a replica hands out another message under the sequence, and its
 * ack acknowledges the message the quorum holds there, which no node was handed (finding 3 of
 * docs/nemesis.md). An `acked-lost` or `acked-delivery-unknown` violation is put down to such a
 * fault only on that evidence: its event was acknowledged by JetStream at a sequence of the ingest
 * stream where the replicas diverge. Every other violation stays Hookline's.
 */

/** One stream's divergent replicas. */
export interface NatsFault {
  stream: string;
  /** The servers whose copy differs from the majority's at one of the sequences (every server, where no copy has a majority). */
  servers: string[];
  fromSeq: number;
  toSeq: number;
  /** How many sequences diverge, from `fromSeq` to `toSeq`. */
  sequences: number;
  /** The first few, each with what each replica holds there. */
  first: Divergence[];
}

/** A violation put down to a NATS fault, with its evidence. */
export interface AttributedViolation {
  violation: Violation;
  stream: string;
  /** The stream sequence JetStream acknowledged the event at. */
  seq: number;
  /** What each replica holds at `seq` (null: nothing). */
  copies: Record<string, StoredMessage | null>;
}

export interface NatsFaults {
  /** The streams compared: each server's message count and last sequence. */
  compared: Array<{ stream: string; replicas: Record<string, { messages: number; lastSeq: number }> }>;
  faults: NatsFault[];
  attributed: AttributedViolation[];
  /** Why a stream's replicas could not be compared (a store unreadable). */
  errors: string[];
}

/** The checks a replica that lost a message explains: the event was acknowledged and never handed to a node. */
const ATTRIBUTABLE = new Set<Violation['check']>(['acked-lost', 'acked-delivery-unknown']);
const FIRST_SHOWN = 10;

/** The servers at `divergence` whose copy is not the one most servers hold. */
function outliers({ copies }: Divergence): string[] {
  const byDigest = new Map<string | null, string[]>();
  for (const [server, copy] of Object.entries(copies)) byDigest.set(copy?.digest ?? null, [...(byDigest.get(copy?.digest ?? null) ?? []), server]);
  const groups = [...byDigest.values()].sort((a, b) => b.length - a.length);
  const servers = Object.keys(copies);
  if (groups[0]!.length * 2 <= servers.length) return servers;
  return groups.slice(1).flat();
}

/** `stream`'s divergences as one fault, or null when its replicas agree. */
export function natsFaultOf(stream: string, found: readonly Divergence[]): NatsFault | null {
  if (found.length === 0) return null;
  const servers = [...new Set(found.flatMap(outliers))].sort();
  return { stream, servers, fromSeq: found[0]!.seq, toSeq: found.at(-1)!.seq, sequences: found.length, first: found.slice(0, FIRST_SHOWN) };
}

/** A stream to compare; `missingIsDeleted` for one that purges (divergences()). */
export interface ComparedStream {
  name: string;
  missingIsDeleted: boolean;
}

/**
 * Compares each stream's replicas, as `read` gives them (each server's messages by sequence):
 * the faults found, each stream's divergent sequences, and the streams that could not be read.
 */
export function compareReplicas(streams: readonly ComparedStream[], read: (stream: string) => Record<string, Map<number, StoredMessage>>): Omit<NatsFaults, 'attributed'> & { divergent: Map<string, Divergence[]> } {
  const result: Omit<NatsFaults, 'attributed'> & { divergent: Map<string, Divergence[]> } = { compared: [], faults: [], errors: [], divergent: new Map() };
  for (const { name, missingIsDeleted } of streams) {
    let replicas: Record<string, Map<number, StoredMessage>>;
    try {
      replicas = read(name);
    } catch (error) {
      result.errors.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    result.compared.push({ stream: name, replicas: Object.fromEntries(Object.entries(replicas).map(([server, messages]) => [server, { messages: messages.size, lastSeq: lastSeq(messages) }])) });
    const found = divergences(replicas, { missingIsDeleted });
    result.divergent.set(name, found);
    const fault = natsFaultOf(name, found);
    if (fault) result.faults.push(fault);
  }
  return result;
}

/** What each replica holds at a sequence, in a line: each copy's Nats-Msg-Id (the event id) and subject. */
export function describeCopies(copies: Record<string, StoredMessage | null>): string {
  return Object.entries(copies).map(([server, copy]) => `${server} ${copy ? `${copy.msgId ?? '(no Nats-Msg-Id)'} on ${copy.subject}` : 'nothing'}`).join('; ');
}

/**
 * Splits `violations` into Hookline's and those a divergence of `stream` (the ingest stream)
 * explains: an attributable check whose event JetStream acknowledged at a divergent sequence.
 */
export function attributeViolations(violations: readonly Violation[], events: readonly ProducedEvent[], stream: string, found: readonly Divergence[]): { hookline: Violation[]; attributed: AttributedViolation[] } {
  const bySeq = new Map(found.map((divergence) => [divergence.seq, divergence]));
  const byId = new Map(events.map((event) => [event.id, event]));
  const hookline: Violation[] = [];
  const attributed: AttributedViolation[] = [];
  for (const violation of violations) {
    const event = violation.eventId === undefined ? undefined : byId.get(violation.eventId);
    const divergence = event?.ackedAt != null && event.natsSeq !== null ? bySeq.get(event.natsSeq) : undefined;
    if (ATTRIBUTABLE.has(violation.check) && divergence) attributed.push({ violation, stream, seq: divergence.seq, copies: divergence.copies });
    else hookline.push(violation);
  }
  return { hookline, attributed };
}
