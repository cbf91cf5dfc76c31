/**
 * A lifecycle's live deliveries by id, iterated in the order they were taken in, exactly as a `Map`
 * would be (the ordered line reads that order), but cheap to fill with a restart's million.
 *
 * A `Map` insert cost about 1 µs per delivery at a million (1.86 s of a 1,000,000-delivery restart,
 * the largest part of it). Deliveries resumed in ascending id order, before any other is held, go
 * instead to a sorted array pair (`resumedIds`/`resumedItems`, an append each) and are found by
 * binary search; everything else goes to the `Map` behind them. A released resumed delivery leaves
 * a hole (`undefined`), skipped when iterating and squeezed out once holes outnumber the rest.
 * Taking a released delivery in again puts it in the `Map`, at the end, as `Map` order would.
 */
export class LiveIndex<T extends { readonly id: string }> {
  /** Ids of resumed deliveries, strictly ascending; a released one keeps its id (a hole in `resumedItems`). */
  private resumedIds: string[] = [];
  private resumedItems: Array<T | undefined> = [];
  private resumedLive = 0;
  /** Index of the first resumed entry that may be live: holes before it are never looked at again. */
  private resumedStart = 0;
  /** Everything not resumed in order, in insertion order (after the resumed ones). */
  private readonly recent = new Map<string, T>();

  get size(): number {
    return this.resumedLive + this.recent.size;
  }

  get(id: string): T | undefined {
    const recent = this.recent.get(id);
    if (recent !== undefined || this.resumedLive === 0) return recent;
    const index = this.resumedIndexOf(id);
    return index < 0 ? undefined : this.resumedItems[index];
  }

  /** Holds `item` under `id`: in place when held already, else at the end. True when it was not held. */
  set(id: string, item: T): boolean {
    if (this.resumedLive > 0 && !this.recent.has(id)) {
      const index = this.resumedIndexOf(id);
      if (index >= 0 && this.resumedItems[index] !== undefined) {
        this.resumedItems[index] = item;
        return false;
      }
    }
    const before = this.recent.size;
    this.recent.set(id, item);
    return this.recent.size > before;
  }

  /**
   * Holds a delivery resumed from LMDB. In ascending id order and before anything else is held, it
   * is an append to the sorted arrays; otherwise it is `set`, with the same result in `values()`.
   * True when it was not held.
   */
  resume(item: T): boolean {
    const last = this.resumedIds.length > 0 ? this.resumedIds[this.resumedIds.length - 1]! : undefined;
    if (this.recent.size > 0 || (last !== undefined && item.id <= last)) return this.set(item.id, item);
    this.resumedIds.push(item.id);
    this.resumedItems.push(item);
    this.resumedLive++;
    return true;
  }

  delete(id: string): boolean {
    if (this.recent.delete(id)) return true;
    if (this.resumedLive === 0) return false;
    const index = this.resumedIndexOf(id);
    if (index < 0 || this.resumedItems[index] === undefined) return false;
    this.resumedItems[index] = undefined;
    this.resumedLive--;
    this.squeeze();
    return true;
  }

  clear(): void {
    this.resetResumed();
    this.recent.clear();
  }

  /** Every live item: the resumed ones in id order, then the rest in insertion order. Not to be changed while iterating. */
  *values(): Generator<T> {
    const items = this.resumedItems;
    // Holes at the front are skipped once for all callers (the ordered line asks for its head often).
    while (this.resumedStart < items.length && items[this.resumedStart] === undefined) this.resumedStart++;
    for (let index = this.resumedStart; index < items.length; index++) {
      const item = items[index];
      if (item !== undefined) yield item;
    }
    yield* this.recent.values();
  }

  /**
   * Puts every item in id order, as refilling a `Map` sorted by id would. Nothing to do when all
   * were resumed in order (a restart, the usual case).
   */
  sortById(): void {
    if (this.recent.size === 0) return;
    const all = [...this.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.clear();
    for (const item of all) this.resume(item);
  }

  /** Position of `id` among the resumed ids, or -1. */
  private resumedIndexOf(id: string): number {
    const ids = this.resumedIds;
    let low = this.resumedStart;
    let high = ids.length - 1;
    // New deliveries' ids sort after every resumed one: no search for them.
    if (high < low || id > ids[high]! || id < ids[low]!) return -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const at = ids[middle]!;
      if (at === id) return middle;
      if (at < id) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  /** Drops the holes once they outnumber the live entries, so released ids are not kept for long. */
  private squeeze(): void {
    if (this.resumedLive === 0) {
      this.resetResumed();
      return;
    }
    const holes = this.resumedItems.length - this.resumedLive;
    if (holes < 1024 || holes < this.resumedLive) return;
    const ids: string[] = [];
    const items: T[] = [];
    for (let index = this.resumedStart; index < this.resumedItems.length; index++) {
      const item = this.resumedItems[index];
      if (item === undefined) continue;
      ids.push(this.resumedIds[index]!);
      items.push(item);
    }
    this.resumedIds = ids;
    this.resumedItems = items;
    this.resumedStart = 0;
  }

  private resetResumed(): void {
    this.resumedIds = [];
    this.resumedItems = [];
    this.resumedLive = 0;
    this.resumedStart = 0;
  }
}
