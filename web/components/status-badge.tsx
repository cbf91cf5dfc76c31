import type { DeliveryStatus } from '../../src/sdk/types.js';
import { statusLabel } from '../format.js';

/** The status in words, with a colour that only repeats what the words say. */
export function StatusBadge({ status }: { status: DeliveryStatus | 'failed' }) {
  return <span class={`badge status-${status}`}>{statusLabel(status)}</span>;
}
