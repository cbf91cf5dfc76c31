/**
 * Cluster partitioning, shared by producers (the SDK publishes to the right subject) and nodes.
 * A project always maps to the same partition: FNV-1a of its id, modulo the partition count.
 */

/** 32-bit FNV-1a over the UTF-16 code units of `text` (ids are ASCII). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

export function partitionOf(projectId: string, partitions: number): number {
  // A project's companion store ids (`<projectId>~ops`: its operational events) go with it. Project
  // ids never hold `~`.
  const companion = projectId.indexOf('~');
  return fnv1a(companion === -1 ? projectId : projectId.slice(0, companion)) % partitions;
}

/** The ingest subject of a project: `<prefix>.<partition>.<projectId>` in a cluster, else `<prefix>.<projectId>`. */
export function ingestSubject(prefix: string, projectId: string, partitions?: number): string {
  return partitions ? `${prefix}.${partitionOf(projectId, partitions)}.${projectId}` : `${prefix}.${projectId}`;
}
