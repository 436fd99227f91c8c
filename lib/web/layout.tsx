/**
 * The frame of every server-rendered page: one landmark structure, the inline style and script
 * the CSP admits by hash (assets.ts), and the "check a file" box.
 */
import type { Child, FC } from 'hono/jsx';
import { SCRIPT, STYLE } from './assets.js';

export interface PageProps {
  title: string;
  description?: string;
  /** Include the check-a-file script (only pages that show the box). */
  script?: boolean;
  /** Or this page's own script instead (its hash must be in the page's CSP: assets.ts pageCsp). */
  inlineScript?: string;
  children?: Child;
}

/** The whole document, without the doctype (see renderPage). */
export const Page: FC<PageProps> = ({ title, description, script, inlineScript, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      {description ? <meta name="description" content={description} /> : null}
      <title>{title}</title>
      <link rel="icon" href="data:," />
      <style dangerouslySetInnerHTML={{ __html: STYLE }} />
    </head>
    <body>
      <header class="site">
        <div class="wrap">
          <p class="brand">
            <a href="/">Evidence verification</a> <span class="muted">·</span> <a href="/dashboard">Dashboard</a> <span class="muted">·</span> <a href="/docs">API reference</a>
          </p>
        </div>
      </header>
      <main class="wrap" id="main">
        {children}
      </main>
      <footer class="site">
        <div class="wrap">
          <p>
            Every proof on this page can be checked without this service: download the receipt and run the offline verifier, OpenSSL and any
            ML-DSA-65 implementation or Ethereum node.
          </p>
        </div>
      </footer>
      {script || inlineScript ? <script dangerouslySetInnerHTML={{ __html: inlineScript ?? SCRIPT }} /> : null}
    </body>
  </html>
);

/**
 * The "check a file" box. The file is hashed in the browser with WebCrypto and never uploaded;
 * the form has no action on purpose. Without JavaScript it explains the alternative.
 */
export const CheckFileBox: FC<{ verifyBase: string }> = ({ verifyBase }) => (
  <section aria-labelledby="check-file-heading">
    <h2 id="check-file-heading">Check a file</h2>
    <form id="check-file" class="check" data-verify-base={verifyBase} method="get" action="#">
      <p>
        Drop a file here, or choose one. It is hashed with SHA-256 in your browser and never leaves your device; then its verification page
        opens.
      </p>
      <label for="check-file-input">File to check</label>
      <input id="check-file-input" name="file" type="file" aria-describedby="check-file-status" />
      <p id="check-file-status" class="status" role="status" aria-live="polite"></p>
      <noscript>
        <p>
          Checking a file here needs JavaScript. Without it, compute the hash yourself (<code>sha256sum photo.jpg</code>) and open{' '}
          <code>/verify/&lt;hash&gt;</code>.
        </p>
      </noscript>
    </form>
  </section>
);

/** A status badge: the word carries the meaning, the colour only repeats it. */
export const Badge: FC<{ tone: 'ok' | 'bad' | 'warn'; children?: Child }> = ({ tone, children }) => (
  <span class={`badge ${tone}`}>
    <span aria-hidden="true">{tone === 'ok' ? '✓ ' : tone === 'bad' ? '✗ ' : '… '}</span>
    {children}
  </span>
);

/** A time as `2026-11-22 10:15:30 UTC` inside a machine-readable <time>. */
export const Time: FC<{ iso: string | null | undefined }> = ({ iso }) => {
  if (!iso) return <span class="muted">unknown</span>;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return <span>{iso}</span>;
  return <time datetime={d.toISOString()}>{d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC')}</time>;
};

/** Renders a page element to a complete HTML document. */
export async function renderPage(page: Child): Promise<string> {
  return `<!DOCTYPE html>${String(await page)}`;
}
