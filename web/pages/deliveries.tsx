import { useState } from 'preact/hooks';
import type { DeliveryListFilter } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { DeliveryDetailPanel } from '../components/delivery-detail.js';
import { DEFAULT_FILTER, DeliveryFilters } from '../components/delivery-filters.js';
import { DeliveryTable } from '../components/delivery-table.js';
import { Notice } from '../components/notice.js';
import { Pager } from '../components/pager.js';
import { useDeliveryList } from '../hooks.js';
import { href } from '../router.js';

/** The delivery log: the API's filters, cursor paging, and a detail panel for the delivery in the address. */
export function DeliveriesPage({ api, openId }: { api: DashboardApi; openId: string | null }) {
  const [filter, setFilter] = useState<DeliveryListFilter>(DEFAULT_FILTER);
  const list = useDeliveryList(api, filter);
  return (
    <div class={openId ? 'split' : 'single'}>
      <div class="list-column">
        <h1 tabIndex={-1}>Delivery log</h1>
        <p class="muted">Every delivery of this project, newest first. Open one to see its attempts and its path through the delivery machine.</p>
        <DeliveryFilters onApply={setFilter} />
        <div class="list-head">
          <span role="status">{list.loading ? 'Loading…' : list.rows ? `${list.rows.length} on this page` : ''}</span>
          <button type="button" class="secondary" onClick={list.reload} disabled={list.loading}>
            Refresh
          </button>
        </div>
        {list.error && <Notice kind="error">{list.error}</Notice>}
        {list.rows && <DeliveryTable rows={list.rows} caption="Deliveries, newest first" page="deliveries" openId={openId} />}
        <Pager list={list} label="Delivery log" />
      </div>
      {openId && <DeliveryDetailPanel api={api} id={openId} closeHref={href('deliveries')} onChanged={list.reload} />}
    </div>
  );
}
