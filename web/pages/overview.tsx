import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { DeliveryStatus } from '../../src/sdk/types.js';
import { DELIVERY_STATUSES } from '../../src/sdk/types.js';
import type { DashboardApi, StateCounts } from '../api.js';
import { describeError, fetchDeliveryDiagram } from '../api.js';
import { Notice } from '../components/notice.js';
import { StatusBadge } from '../components/status-badge.js';
import { usePolling } from '../hooks.js';

export const COUNTS_REFRESH_MS = 2_000;
const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Puts a count badge on every state of the diagram that is a delivery status (the transient
 * `failed` has none: no delivery rests there). The diagram comes from src/diagram, which marks
 * each state `<g class="state" data-state>` around its box.
 */
function placeCounts(container: HTMLElement, counts: StateCounts): void {
  container.querySelectorAll<SVGGElement>('g.state[data-state]').forEach((group) => {
    const state = group.dataset.state as DeliveryStatus;
    if (!DELIVERY_STATUSES.includes(state)) return;
    const count = counts[state];
    const box = group.querySelector('rect');
    if (!box) return;
    let badge = group.querySelector<SVGGElement>('g.count');
    if (!badge) {
      badge = document.createElementNS(SVG_NS, 'g');
      badge.setAttribute('class', 'count');
      badge.append(document.createElementNS(SVG_NS, 'rect'), document.createElementNS(SVG_NS, 'text'));
      group.append(badge);
    }
    const text = String(count);
    const width = 14 + 8 * text.length;
    const right = Number(box.getAttribute('x')) + Number(box.getAttribute('width'));
    const top = Number(box.getAttribute('y'));
    const pill = badge.querySelector('rect')!;
    pill.setAttribute('x', String(right - width + 6));
    pill.setAttribute('y', String(top - 11));
    pill.setAttribute('width', String(width));
    pill.setAttribute('height', '22');
    pill.setAttribute('rx', '11');
    const label = badge.querySelector('text')!;
    label.setAttribute('x', String(right - width / 2 + 6));
    label.setAttribute('y', String(top + 5));
    label.setAttribute('text-anchor', 'middle');
    label.textContent = text;
    group.dataset.count = text;
    group.classList.toggle('occupied', count > 0);
  });
}

/** The delivery machine as drawn from its definition, each state with the live count of this project's deliveries in it. */
export function OverviewPage({ api }: { api: DashboardApi }) {
  const [svg, setSvg] = useState<string | null>(null);
  const [counts, setCounts] = useState<StateCounts | null>(null);
  const [updatedAt, setUpdatedAt] = useState<Date | null>(null);
  const [error, setError] = useState<string | null>(null);
  const diagram = useRef<HTMLDivElement>(null);

  useEffect(() => {
    fetchDeliveryDiagram()
      .then(setSvg)
      .catch((caught: unknown) => setError(describeError(caught)));
  }, []);

  usePolling(
    async (signal) => {
      try {
        setCounts(await api.stateCounts(signal));
        setUpdatedAt(new Date());
        setError(null);
      } catch (caught) {
        if (!signal.aborted) setError(describeError(caught));
      }
    },
    COUNTS_REFRESH_MS,
    [api],
  );

  useLayoutEffect(() => {
    if (diagram.current && counts) placeCounts(diagram.current, counts);
  }, [svg, counts]);

  const total = counts ? DELIVERY_STATUSES.reduce((sum, status) => sum + counts[status], 0) : null;
  return (
    <div class="single">
      <h1 tabIndex={-1}>Delivery states</h1>
      <p class="muted">
        The delivery machine, drawn from its definition (the same drawing as <code>hookline diagram --format svg</code>). Each state shows how many of this project's deliveries are in it now; the
        counts refresh every {COUNTS_REFRESH_MS / 1000} seconds.
      </p>
      {error && <Notice kind="error">{error}</Notice>}
      <div class="overview">
        <figure class="panel diagram-figure">
          <div class="diagram" ref={diagram} role="region" aria-label="Delivery machine diagram" tabIndex={0} dangerouslySetInnerHTML={svg ? { __html: svg } : undefined} />
          <figcaption class="muted">
            Dashed: <code>failed</code> is left at once, to <code>retrying</code> or <code>dead_lettered</code>. Double border: final state.
          </figcaption>
        </figure>
        <section class="panel counts" aria-labelledby="counts-title">
          <h2 id="counts-title">Deliveries by state</h2>
          <table class="data compact state-counts">
            <caption class="visually-hidden">Deliveries of this project in each state</caption>
            <thead>
              <tr>
                <th scope="col">State</th>
                <th scope="col" class="number">Deliveries</th>
              </tr>
            </thead>
            <tbody>
              {DELIVERY_STATUSES.map((status) => (
                <tr key={status} data-status={status}>
                  <th scope="row">
                    <StatusBadge status={status} />
                  </th>
                  <td class="number" data-count={counts ? counts[status] : ''}>
                    {counts ? counts[status] : '…'}
                  </td>
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <th scope="row">Total</th>
                <td class="number">{total ?? '…'}</td>
              </tr>
            </tfoot>
          </table>
          <p class="muted small">{updatedAt ? `Updated ${updatedAt.toLocaleTimeString()}` : 'Loading…'}</p>
        </section>
      </div>
    </div>
  );
}
