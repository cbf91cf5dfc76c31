import type { ComponentChildren } from 'preact';

/** An error (announced at once, `role="alert"`) or a result (announced politely, `role="status"`). */
export function Notice({ kind, children }: { kind: 'error' | 'success' | 'info'; children: ComponentChildren }) {
  return (
    <div class={`alert ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}
