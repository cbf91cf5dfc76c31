import type { DeliveryView, NodeView, Violation } from './checks.js';
import type { NemesisNode } from './nodes.js';
import type { Receipt } from './receivers.js';
import type { NemesisSystem } from './setup.js';

/**
 * What the checks read from the cluster after the heal: every delivery as each node's API lists it
 * (`GET /v1/logs/webhook-deliveries`, every page, every project), and for each violation the
 * evidence a reader needs: the delivery's attempts and transitions, the receipts and the node log
 * lines that name it.
 */

const PAGE = 250;
const READ_TRIES = 5;
/** Violations of one check given evidence; the rest are only listed. */
const EVIDENCE_PER_CHECK = 10;
const LOG_LINES_PER_VIOLATION = 25;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function readNode(system: NemesisSystem, node: NemesisNode): Promise<Map<string, DeliveryView>> {
  const deliveries = new Map<string, DeliveryView>();
  for (const project of system.projects) {
    const client = system.client(node, project);
    for await (const delivery of client.listDeliveries({ limit: PAGE }, { signal: AbortSignal.timeout(60_000) })) {
      deliveries.set(delivery.id, {
        id: delivery.id,
        project: project.projectId,
        eventId: delivery.eventId,
        status: delivery.status,
        attempts: delivery.attempts,
        nextAttemptAt: delivery.nextAttemptAt === null ? null : Date.parse(delivery.nextAttemptAt),
      });
    }
  }
  return deliveries;
}

/** Each node's list of every delivery; a node that fails READ_TRIES times in a row is unreadable. */
export async function readViews(system: NemesisSystem): Promise<NodeView[]> {
  const views: NodeView[] = [];
  for (const node of system.nodes) {
    let error: string | null = null;
    let deliveries: Map<string, DeliveryView> | null = null;
    for (let attempt = 1; attempt <= READ_TRIES && !deliveries; attempt++) {
      try {
        deliveries = await readNode(system, node);
      } catch (failure) {
        error = failure instanceof Error ? failure.message : String(failure);
        await pause(1_000);
      }
    }
    views.push({ nodeId: node.id, deliveries, error: deliveries ? null : error });
  }
  return views;
}

/** Adds evidence to the first violations of each check: the delivery's story from the API, the receipts, the log lines. */
export async function addEvidence(system: NemesisSystem, violations: Violation[], receipts: readonly Receipt[], startedAt: number): Promise<void> {
  const given = new Map<string, number>();
  const node = system.nodes[0]!;
  const logs = system.nodes.map((each) => ({ id: each.id, lines: each.logLines() }));
  for (const violation of violations) {
    const count = given.get(violation.check) ?? 0;
    if (count >= EVIDENCE_PER_CHECK || (!violation.eventId && !violation.deliveryId)) continue;
    given.set(violation.check, count + 1);
    const evidence: string[] = [];
    const project = system.projects.find((each) => each.projectId === violation.project);
    if (project) {
      const client = system.client(node, project);
      try {
        const ids = violation.deliveryId ? [violation.deliveryId] : (await client.listDeliveriesPage({ eventId: violation.eventId!, limit: 10 }, { signal: AbortSignal.timeout(10_000) })).data.map((each) => each.id);
        if (ids.length === 0) evidence.push(`API: no delivery for event ${violation.eventId}`);
        for (const id of ids) {
          const detail = await client.getDelivery(id, { signal: AbortSignal.timeout(10_000) });
          evidence.push(`API: ${id} ${detail.status}, ${detail.attempts} attempts, next ${detail.nextAttemptAt ?? '–'}`);
          for (const attempt of detail.attemptLog) evidence.push(`  attempt ${attempt.attempt} at ${attempt.at}: ${attempt.statusCode ?? attempt.errorCode ?? '?'} ${attempt.error ?? ''}`.trimEnd());
          for (const transition of detail.transitions) evidence.push(`  ${transition.at} ${transition.from ?? '∅'} -> ${transition.to} (${transition.event})`);
        }
      } catch (error) {
        evidence.push(`API: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    for (const receipt of receipts) {
      if (receipt.eventId === violation.eventId || receipt.webhookId === violation.deliveryId) {
        evidence.push(`receiver: ${receipt.webhookId} for ${receipt.eventId} at ${receipt.receivedAt - startedAt} ms, answered ${receipt.status || 'nothing yet'}${receipt.verified ? '' : ', signature NOT verified'}`);
      }
    }
    const needles = [violation.eventId, violation.deliveryId].filter((needle): needle is string => Boolean(needle));
    const lines = logs.flatMap(({ id, lines: nodeLines }) => nodeLines.filter((line) => needles.some((needle) => line.includes(needle))).map((line) => `${id}: ${line}`));
    evidence.push(...lines.slice(0, LOG_LINES_PER_VIOLATION));
    if (lines.length > LOG_LINES_PER_VIOLATION) evidence.push(`(${lines.length - LOG_LINES_PER_VIOLATION} more log lines)`);
    violation.evidence = evidence;
  }
}

/** Each node's /metrics text at the end (for a post-mortem), or why it could not be read. */
export async function readMetrics(system: NemesisSystem): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const node of system.nodes) {
    try {
      texts.set(node.id, await (await fetch(`${node.url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text());
    } catch (error) {
      texts.set(node.id, `# not read: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  return texts;
}
