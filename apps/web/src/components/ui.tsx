import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { ApiError } from '../api/client';

/** An action's failure, shown where it was taken: the API's `message`, and for a 429 when to try again. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  let text = error instanceof Error ? error.message : String(error);
  if (error instanceof ApiError && error.status === 429) {
    // Every 429 says when to try again (Retry-After), so the person need not guess.
    text += error.retryAfter ? ` Try again in ${formatSeconds(error.retryAfter)}.` : ' Try again in a moment.';
  } else if (error instanceof ApiError && error.status >= 500 && error.retryAfter) {
    // a request cut by the database time bound names when it may pass (docs/api.md "Errors")
    text += ` Try again in ${formatSeconds(error.retryAfter)}.`;
  }
  return (
    <p role="alert" className="error">
      {text}
    </p>
  );
}

export function formatSeconds(s: number): string {
  if (s < 90) return `${Math.ceil(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/**
 * Moves focus to the page's main heading (or `#main`): where focus goes when the control that
 * had it is gone (a dialog's opener removed, a deleted message), so it is never lost to <body>.
 */
export function focusMainHeading(): void {
  const heading = document.querySelector<HTMLElement>('main h1');
  if (heading) {
    if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
    heading.focus();
    return;
  }
  document.getElementById('main')?.focus();
}

/**
 * A modal dialog on the native <dialog> (role dialog, focus moved in on open, Escape closes,
 * focus back to where it was on close, or to the page's main heading when that control is gone).
 * The element marked `data-autofocus` gets focus first (else the browser's first focusable).
 */
export function Dialog({ title, open, onClose, children }: { title: string; open: boolean; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      const opener = document.activeElement as HTMLElement | null;
      d.showModal();
      d.querySelector<HTMLElement>('[data-autofocus]')?.focus();
      return () => {
        if (opener && opener !== document.body && opener.isConnected) opener.focus();
        else focusMainHeading();
      };
    }
    if (!open && d.open) d.close();
    return undefined;
  }, [open]);
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      {open && (
        <>
          <h2 id={titleId}>{title}</h2>
          {children}
        </>
      )}
    </dialog>
  );
}

/**
 * A button that asks to confirm in a dialog; the dialog's confirm button has the same name.
 * Focus starts on "Cancel", so a stray Enter never confirms a destructive step.
 */
export function ConfirmButton({ label, question, detail, onConfirm, disabled }: { label: string; question: string; detail?: ReactNode; onConfirm: () => void; disabled?: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="danger" disabled={disabled} onClick={() => setOpen(true)}>
        {label}
      </button>
      <Dialog title={question} open={open} onClose={() => setOpen(false)}>
        {detail}
        <div className="row">
          <button
            type="button"
            className="danger"
            onClick={() => {
              setOpen(false);
              onConfirm();
            }}
          >
            {label}
          </button>
          <button type="button" data-autofocus onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </>
  );
}

/** A secret shown once: a warning, the value, "Copy" and "Done" (Escape closes too). */
export function SecretDialog({ title, secret, note, onClose }: { title: string; secret: string | null; note?: ReactNode; onClose: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <Dialog title={title} open={secret !== null} onClose={onClose}>
      <p className="warning">Copy it now: it will not be shown again.</p>
      {note}
      <p>
        <code className="secret" data-testid="secret-value">
          {secret}
        </code>
      </p>
      <div className="row">
        <button
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(secret ?? '').then(() => setCopied(true), () => setCopied(false));
          }}
        >
          Copy
        </button>
        <button type="button" onClick={onClose}>
          Done
        </button>
        <span role="status">{copied ? 'Copied.' : ''}</span>
      </div>
    </Dialog>
  );
}

export function EmptyState({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="empty">
      <h2>{title}</h2>
      {children}
    </section>
  );
}
