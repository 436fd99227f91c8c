/**
 * The pages' only assets, inline: one style sheet and one script. Nothing is loaded from
 * elsewhere, and the Content-Security-Policy allows exactly these two by their SHA-256 hashes
 * (CSP Level 3 §8.3 hash-source), so the HTML stays cacheable (no per-response nonce) and no
 * injected markup can run script or style.
 */
import { createHash } from 'node:crypto';

export const STYLE = `
:root{color-scheme:light;--fg:#1a1a1a;--muted:#4a4a4a;--line:#c8c8c8;--link:#0645ad;--focus:#1a56db;
--ok-bg:#e6f4ea;--ok-fg:#0b5a1e;--ok-line:#1e7d32;--bad-bg:#fdecea;--bad-fg:#8c1d18;--bad-line:#b3261e;
--warn-bg:#fff4e5;--warn-fg:#6b3f00;--warn-line:#b26a00}
*{box-sizing:border-box}
html{font-size:100%;-webkit-text-size-adjust:100%}
body{margin:0;background:#fff;color:var(--fg);font:1rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif}
.wrap{max-width:46rem;margin:0 auto;padding:1rem}
header.site{border-bottom:1px solid var(--line)}
header.site .wrap{padding-top:.75rem;padding-bottom:.75rem}
header.site .brand{margin:0;font-weight:600}
h1{font-size:1.6rem;line-height:1.25;margin:0 0 .5rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
h3{font-size:1.05rem;margin:0 0 .5rem}
p{margin:.5rem 0}
a{color:var(--link)}
a:focus-visible,button:focus-visible,input:focus-visible,summary:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.9em;overflow-wrap:anywhere;word-break:break-all}
.verdict{border:2px solid var(--line);border-left-width:.5rem;border-radius:.5rem;padding:1rem;margin:1rem 0}
.verdict.ok{background:var(--ok-bg);border-color:var(--ok-line)}
.verdict.ok h1{color:var(--ok-fg)}
.verdict.bad{background:var(--bad-bg);border-color:var(--bad-line)}
.verdict.bad h1{color:var(--bad-fg)}
.verdict.warn{background:var(--warn-bg);border-color:var(--warn-line)}
.verdict.warn h1{color:var(--warn-fg)}
.proofs{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}
.proof{border:1px solid var(--line);border-radius:.5rem;padding:.75rem 1rem}
.proof h3{display:flex;flex-wrap:wrap;gap:.5rem;align-items:baseline;justify-content:space-between}
.badge{display:inline-block;border-radius:1rem;padding:0 .6rem;font-size:.875rem;font-weight:600;border:1px solid}
.badge.ok{background:var(--ok-bg);color:var(--ok-fg);border-color:var(--ok-line)}
.badge.bad{background:var(--bad-bg);color:var(--bad-fg);border-color:var(--bad-line)}
.badge.warn{background:var(--warn-bg);color:var(--warn-fg);border-color:var(--warn-line)}
dl.facts{display:grid;grid-template-columns:minmax(7rem,11rem) 1fr;gap:.25rem 1rem;margin:.5rem 0 0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0;min-width:0;overflow-wrap:anywhere}
.check{border:2px dashed var(--muted);border-radius:.5rem;padding:1rem;margin:1rem 0}
.check.dragging{border-style:solid;border-color:var(--focus);background:#eef3fd}
.check label{display:block;font-weight:600;margin:.5rem 0 .25rem}
.check input[type=file]{max-width:100%;font:inherit}
.status{min-height:1.5em;color:var(--muted)}
.muted{color:var(--muted)}
pre{background:#f4f4f4;border:1px solid var(--line);border-radius:.25rem;padding:.5rem;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
table.tiers{border-collapse:collapse;width:100%;min-width:30rem;margin:.5rem 0}
table.tiers th,table.tiers td{border:1px solid var(--line);padding:.4rem .6rem;text-align:left;vertical-align:top}
table.tiers th[scope=col]{background:#f4f4f4}
.table-scroll{overflow-x:auto}
.check input[type=text]{font:inherit;width:100%;max-width:40rem;padding:.35rem .5rem;border:1px solid var(--muted);border-radius:.25rem}
.check button{font:inherit;margin-top:.5rem;padding:.35rem .9rem;border:1px solid var(--focus);border-radius:.25rem;background:#fff;color:var(--focus);cursor:pointer}
.visually-hidden{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
.panel{border:1px solid var(--line);border-radius:.5rem;padding:1rem;margin:1rem 0}
.panel label{display:block;font-weight:600;margin:.5rem 0 .25rem}
.panel input[type=email],.panel input[type=password],.panel input[type=text],.panel input[type=url]{font:inherit;width:100%;max-width:28rem;padding:.4rem .5rem;border:1px solid var(--muted);border-radius:.25rem}
.panel input[type=file]{max-width:100%;font:inherit}
.buttons{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:.75rem}
main button{font:inherit;padding:.4rem .9rem;border:1px solid var(--focus);border-radius:.25rem;background:#fff;color:var(--focus);cursor:pointer;min-height:2.5rem}
main button.primary{background:var(--focus);color:#fff}
main button.danger{border-color:var(--bad-line);color:var(--bad-fg)}
main button:disabled{opacity:.6;cursor:progress}
main button[hidden]{display:none}
.message{min-height:1.5em;margin:.5rem 0}
.message.ok{color:var(--ok-fg)}
.message.bad{color:var(--bad-fg);font-weight:600}
.message.warn{background:var(--warn-bg);color:var(--warn-fg);border:1px solid var(--warn-line);border-radius:.25rem;padding:.5rem .75rem}
.new-key{border:2px solid var(--ok-line);background:var(--ok-bg);border-radius:.5rem;padding:.75rem 1rem;margin:1rem 0}
table.keys{border-collapse:collapse;width:100%;min-width:36rem}
table.keys th,table.keys td{border-bottom:1px solid var(--line);padding:.4rem .5rem;text-align:left;vertical-align:top}
.confirm{margin:.25rem 0}
fieldset.events{border:0;margin:.5rem 0 0;padding:0}fieldset.events legend{font-weight:600;padding:0}fieldset.events label{display:inline-flex;gap:.35rem;font-weight:400;margin:.25rem 1rem .25rem 0}
td.url{min-width:11rem;overflow-wrap:anywhere}td.status{min-width:10rem}td.events span{display:block}td.event{overflow-wrap:anywhere;min-width:10rem}td.attempts{min-width:12rem}.deliveries{margin-top:2rem}.bad-text{color:var(--bad-fg)}ol.attempts{margin:0;padding-left:1.25rem}
ul.evidence{padding-left:1.25rem}
ul.evidence li{margin:.25rem 0}
meter{width:8rem;vertical-align:middle}
p.cta{font-size:1.1rem;font-weight:600}
footer.site{border-top:1px solid var(--line);margin-top:2rem;color:var(--muted);font-size:.875rem}
@media (max-width:36rem){dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.5rem}h1{font-size:1.4rem}
table.keys{min-width:0}table.keys thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0,0,0,0)}table.keys tr{display:block;border-bottom:1px solid var(--line);padding:.5rem 0}table.keys td{display:block;border:0;padding:.1rem 0}table.keys td[data-label]::before{content:attr(data-label) ": ";color:var(--muted)}}
@media (prefers-reduced-motion:no-preference){.check{transition:background-color .15s}}
`;

/**
 * "Check a file": hashes a chosen or dropped file with WebCrypto (the file never leaves the
 * browser) and opens the verify page of its SHA-256. `form[data-verify-base]` says where verify
 * pages live relative to the current page.
 */
export const SCRIPT = `
(function () {
  // "Check a hash": a SHA-256 typed or pasted opens its verification page.
  var hashForm = document.getElementById('check-hash');
  if (hashForm) {
    hashForm.addEventListener('submit', function (event) {
      event.preventDefault();
      var field = document.getElementById('check-hash-input');
      var note = document.getElementById('check-hash-status');
      var hex = field.value.trim().toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(hex)) { note.textContent = 'A SHA-256 hash is 64 hexadecimal characters (0-9, a-f).'; field.focus(); return; }
      window.location.assign(new URL((hashForm.getAttribute('data-verify-base') || './') + hex, window.location.href).href);
    });
  }
  var form = document.getElementById('check-file');
  if (!form) return;
  var input = document.getElementById('check-file-input');
  var status = document.getElementById('check-file-status');
  var base = form.getAttribute('data-verify-base') || './';
  function say(text) { status.textContent = text; }
  function size(n) { return n < 1048576 ? Math.max(1, Math.round(n / 1024)) + ' KB' : (n / 1048576).toFixed(1) + ' MB'; }
  function check(file) {
    if (!file) return;
    if (!window.crypto || !window.crypto.subtle) { say('This browser cannot hash files on this page: WebCrypto needs HTTPS. Run sha256sum on the file instead.'); return; }
    form.setAttribute('aria-busy', 'true');
    say('Hashing ' + file.name + ' (' + size(file.size) + ') in this browser. The file is not uploaded.');
    file.arrayBuffer().then(function (bytes) { return window.crypto.subtle.digest('SHA-256', bytes); }).then(function (digest) {
      var hex = Array.prototype.map.call(new Uint8Array(digest), function (b) { return (b < 16 ? '0' : '') + b.toString(16); }).join('');
      say('SHA-256 ' + hex + '. Opening its verification page.');
      window.location.assign(new URL(base + hex, window.location.href).href);
    }, function (error) {
      form.removeAttribute('aria-busy');
      say('The file could not be read: ' + (error && error.message ? error.message : error));
    });
  }
  form.addEventListener('submit', function (event) { event.preventDefault(); check(input.files && input.files[0]); });
  input.addEventListener('change', function () { check(input.files && input.files[0]); });
  ['dragenter', 'dragover'].forEach(function (type) {
    form.addEventListener(type, function (event) { event.preventDefault(); form.classList.add('dragging'); });
  });
  ['dragleave', 'dragend'].forEach(function (type) {
    form.addEventListener(type, function () { form.classList.remove('dragging'); });
  });
  form.addEventListener('drop', function (event) {
    event.preventDefault();
    form.classList.remove('dragging');
    var files = event.dataTransfer && event.dataTransfer.files;
    check(files && files[0]);
  });
  // A file dropped next to the box must not make the browser open it (and leave the page).
  document.addEventListener('dragover', function (event) { event.preventDefault(); });
  document.addEventListener('drop', function (event) { event.preventDefault(); });
})();
`;

const sha256Base64 = (text: string) => createHash('sha256').update(text, 'utf8').digest('base64');

/**
 * A page's Content-Security-Policy: nothing but the inline style above and the page's one inline
 * script, each admitted by its hash; no frames, forms only to this origin. `img-src data:` admits
 * the empty favicon. `connect: true` (the dashboard only) lets the script call this origin's API;
 * every other page makes no connection at all.
 */
export function pageCsp(script: string, options: { connect?: boolean } = {}): string {
  return [
    "default-src 'none'",
    `style-src 'sha256-${sha256Base64(STYLE)}'`,
    `script-src 'sha256-${sha256Base64(script)}'`,
    "img-src 'self' data:",
    ...(options.connect ? ["connect-src 'self'"] : []),
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The CSP of the pages that run the check-a-file script (or none). */
export const CONTENT_SECURITY_POLICY = pageCsp(SCRIPT);

/** Headers every HTML page carries, with its CSP. */
export function securityHeaders(csp: string): Readonly<Record<string, string>> {
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
  };
}

/** The headers of the pages under {@link CONTENT_SECURITY_POLICY}. */
export const SECURITY_HEADERS = securityHeaders(CONTENT_SECURITY_POLICY);
