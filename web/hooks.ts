import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { DashboardApi } from './api.js';
import { describeError } from './api.js';
import type { Delivery, DeliveryListFilter } from '../src/sdk/types.js';

/**
 * Runs `task` now and then `intervalMs` after each run ends (never two at once), while the page is
 * visible; a hidden tab stops polling and a visible one resumes at once.
 */
export function usePolling(task: (signal: AbortSignal) => Promise<void>, intervalMs: number, deps: readonly unknown[] = []): void {
  const latest = useRef(task);
  latest.current = task;
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    const run = async () => {
      timer = undefined;
      if (running || controller.signal.aborted || document.hidden) return;
      running = true;
      try {
        await latest.current(controller.signal);
      } catch {
        // the task reports its own errors; polling goes on
      } finally {
        running = false;
        if (!controller.signal.aborted && !document.hidden) timer = setTimeout(run, intervalMs);
      }
    };
    const onVisibility = () => {
      if (!document.hidden && timer === undefined && !running) void run();
    };
    document.addEventListener('visibilitychange', onVisibility);
    void run();
    return () => {
      controller.abort();
      if (timer !== undefined) clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [intervalMs, ...deps]);
}

export interface DeliveryList {
  rows: Delivery[] | null;
  loading: boolean;
  error: string | null;
  /** 1 for the newest page. */
  pageNumber: number;
  hasOlder: boolean;
  older(): void;
  newer(): void;
  /** Loads the current page again (after an action changed it). */
  reload(): void;
}

/**
 * One page of the delivery log for `filter`, with cursor paging: the cursors of the pages already
 * seen are kept so "newer" goes back without the API needing a backward cursor. A new filter
 * starts again from the newest page.
 */
export function useDeliveryList(api: DashboardApi, filter: DeliveryListFilter): DeliveryList {
  const filterKey = JSON.stringify(filter);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [rows, setRows] = useState<Delivery[] | null>(null);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);

  useEffect(() => setCursors([undefined]), [filterKey]);

  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    api.client
      .listDeliveriesPage({ ...filter, ...(cursor ? { cursor } : {}) }, { signal: controller.signal })
      .then((page) => {
        setRows(page.data);
        setNextCursor(page.nextCursor);
        setError(null);
      })
      .catch((caught: unknown) => {
        if (!controller.signal.aborted) setError(describeError(caught));
      })
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
    return () => controller.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, filterKey, cursor, generation]);

  return {
    rows,
    loading,
    error,
    pageNumber: cursors.length,
    hasOlder: nextCursor !== null,
    older: useCallback(() => nextCursor && setCursors((stack) => [...stack, nextCursor]), [nextCursor]),
    newer: useCallback(() => setCursors((stack) => (stack.length > 1 ? stack.slice(0, -1) : stack)), []),
    reload: useCallback(() => setGeneration((n) => n + 1), []),
  };
}
