import type { ComponentChildren } from 'preact';
import { href } from '../router.js';

/** An error (announced at once, `role="alert"`) or a result (announced politely, `role="status"`). */
export function Notice({ kind, children }: { kind: 'error' | 'success' | 'info'; children: ComponentChildren }) {
  return (
    <div class={`alert ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

/** The outcome of an action that may have made a delivery: its text, and a link to that delivery. */
export interface DeliveryOutcome {
  kind: 'error' | 'success' | 'info';
  text: string;
  deliveryId?: string | null;
}

export function DeliveryOutcomeNotice({ outcome }: { outcome: DeliveryOutcome }) {
  return (
    <Notice kind={outcome.kind}>
      {outcome.text}
      {outcome.deliveryId && (
        <a href={href('deliveries', outcome.deliveryId)}>
          <code>{outcome.deliveryId}</code>
        </a>
      )}
    </Notice>
  );
}
