/**
 * The dashboard's DOM and formatting helpers (browser code: see app.ts for how it is built).
 */

/**
 * The page's element with this id (lib/web/dashboard-view.tsx), checked to be of `type` when one
 * is given. A missing element is a mismatch between the shell and the script: it throws at once.
 */
export function $(id: string): HTMLElement;
export function $<T extends HTMLElement>(id: string, type: abstract new () => T): T;
export function $(id: string, type: abstract new () => HTMLElement = HTMLElement): HTMLElement {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`The page has no ${type.name} #${id}.`);
  return node;
}

/** The page's <input> with this id. */
export const input = (id: string): HTMLInputElement => $(id, HTMLInputElement);

export function show(node: HTMLElement, on: boolean): void {
  node.hidden = !on;
}

export type Tone = 'ok' | 'bad' | 'warn';

/** Writes a message into the live region `id` (empty text clears it). */
export function say(id: string, text?: string, tone?: Tone): void {
  const node = $(id);
  node.textContent = text || '';
  node.className = 'message' + (tone ? ' ' + tone : '');
}

/** An ISO 8601 time as "YYYY-MM-DD hh:mm:ss UTC"; "never" for none, the text itself if unreadable. */
export function when(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
}

export function number(n: number): string {
  return Number(n).toLocaleString('en-US');
}

/** Attributes of {@link el}; `text` sets the text content instead. */
export type Attributes = Record<string, string>;

/** A new element with these attributes and children (strings become text nodes). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attributes, children?: (Node | string)[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children || []) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  return node;
}

export function link(href: string, text: string): HTMLAnchorElement {
  return el('a', { href, text });
}

/** Marks a button busy (disabled, aria-busy) or free again. */
export function busy(button: HTMLButtonElement, on: boolean): void {
  button.disabled = on;
  button.setAttribute('aria-busy', on ? 'true' : 'false');
}

/** An error's message, as the page shows it. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Asks in `cell`, in place of `trigger`, whether to go on: a question with a danger button `yes`
 * and Cancel (which puts the trigger back). `yes` runs `act` with the button, busy until it ends
 * (act decides what the page says and does on success and on failure).
 */
export function confirmInPlace(cell: HTMLElement, trigger: HTMLButtonElement, ask: { label: string; question: string; yes: string }, act: (yes: HTMLButtonElement) => Promise<void>): void {
  const yes = el('button', { type: 'button', class: 'danger', text: ask.yes });
  const no = el('button', { type: 'button', text: 'Cancel' });
  const question = el('p', { class: 'confirm', role: 'group', 'aria-label': ask.label }, [ask.question + ' ', yes, ' ', no]);
  trigger.hidden = true;
  cell.appendChild(question);
  no.addEventListener('click', () => {
    question.remove();
    trigger.hidden = false;
    trigger.focus();
  });
  yes.addEventListener('click', () => {
    busy(yes, true);
    act(yes).catch(() => undefined);
  });
  yes.focus();
}
