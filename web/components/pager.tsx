import type { DeliveryList } from '../hooks.js';

export function Pager({ list, label }: { list: DeliveryList; label: string }) {
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" class="secondary" onClick={list.newer} disabled={list.pageNumber === 1 || list.loading}>
        ← Newer
      </button>
      <span class="muted">Page {list.pageNumber}</span>
      <button type="button" class="secondary" onClick={list.older} disabled={!list.hasOlder || list.loading}>
        Older →
      </button>
    </nav>
  );
}
