import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export interface ConfirmDialogProps {
  open: boolean;
  title: string;
  confirmLabel: string;
  /** `danger` colours the confirm button for an action that cannot be undone. */
  tone?: 'primary' | 'danger';
  busy?: boolean;
  onConfirm(): void;
  onCancel(): void;
  children: ComponentChildren;
}

/**
 * A modal confirmation on the native `<dialog>`: the browser traps focus inside it, Escape cancels,
 * and focus returns to the button that opened it when it closes. Cancel is focused first, so a
 * stray Enter does not confirm.
 */
export function ConfirmDialog({ open, title, confirmLabel, tone = 'primary', busy = false, onConfirm, onCancel, children }: ConfirmDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) {
      element.showModal();
      cancel.current?.focus();
    } else if (!open && element.open) {
      element.close();
    }
  }, [open]);
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby="confirm-title" onClose={() => open && onCancel()}>
      <h2 id="confirm-title">{title}</h2>
      <div class="dialog-body">{children}</div>
      <div class="actions">
        <button ref={cancel} type="button" class="secondary" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="button" class={tone} onClick={onConfirm} disabled={busy}>
          {busy ? 'Working…' : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
