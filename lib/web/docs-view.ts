/**
 * /docs: the OpenAPI document rendered by Swagger UI, every file from this origin. Swagger UI
 * writes style attributes as it renders, which no hash can admit, so this page alone allows
 * inline *styles* ('unsafe-inline' in style-src); scripts stay 'self' only (no inline script at
 * all: the start-up code is a file too), and nothing may be fetched but this origin.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The start-up script (served as /docs/init.js): render /api/openapi.json into #swagger-ui. */
export const DOCS_INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/openapi.json',
    dom_id: '#swagger-ui',
    // Deep links put an <a> inside each operation's <button> (axe: nested-interactive); off.
    deepLinking: false,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    // Its highlighter writes inline colours below 4.5:1 contrast (axe color-contrast): plain examples.
    syntaxHighlight: { activated: false }
  });
  // As Swagger UI renders: name its server picker (axe select-name), and let the keyboard reach
  // its scrolling examples (axe scrollable-region-focusable).
  new MutationObserver(function () {
    var servers = document.getElementById('servers');
    if (servers && !servers.hasAttribute('aria-label')) servers.setAttribute('aria-label', 'Server');
    // A parameter's value picker (an enum or boolean query parameter) is named after its parameter.
    document.querySelectorAll('.parameters-col_description select:not([aria-label]), .parameters-col_description input:not([aria-label])').forEach(function (field) {
      var row = field.closest('tr[data-param-name]');
      if (row) field.setAttribute('aria-label', row.getAttribute('data-param-name') + ' (' + row.getAttribute('data-param-in') + ' parameter)');
    });
    document.querySelectorAll('.highlight-code > pre:not([tabindex]), .microlight:not([tabindex])').forEach(function (pre) {
      pre.setAttribute('tabindex', '0');
    });
  }).observe(document.getElementById('swagger-ui'), { childList: true, subtree: true });
});
`;

/**
 * Served as /docs/overrides.css after Swagger UI's own sheet: its colours that fail WCAG 2.2 AA
 * contrast (axe color-contrast: white on the light method colours, light blue links, the green
 * version badge) darkened to at least 4.5:1, each keeping its hue.
 */
export const DOCS_OVERRIDES_CSS = `.swagger-ui .opblock.opblock-post .opblock-summary-method{background:#187a4b}
.swagger-ui .opblock.opblock-get .opblock-summary-method{background:#0b5fad}
.swagger-ui .opblock.opblock-put .opblock-summary-method{background:#8a5100}
.swagger-ui .opblock.opblock-delete .opblock-summary-method{background:#b81c1c}
.swagger-ui .opblock.opblock-patch .opblock-summary-method{background:#0b6e5a}
.swagger-ui .opblock.opblock-head .opblock-summary-method{background:#7310cc}
.swagger-ui .info .title small{background:#5b6270}
.swagger-ui .info .title small.version-stamp{background:#3f6b00}
.swagger-ui .info .base-url,.swagger-ui .info a,.swagger-ui .info .url{color:#1f5fa8}
.swagger-ui .btn.authorize{color:#187a4b;border-color:#187a4b}
.swagger-ui .btn.authorize svg{fill:#187a4b}
.swagger-ui table.headers .header-example,.swagger-ui .parameter__in,.swagger-ui .parameter__deprecated{color:#595959}
.swagger-ui .markdown code,.swagger-ui .renderedMarkdown code,.swagger-ui p code{color:#7a0fd6}
`;

/** The page itself. */
export const DOCS_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="description" content="The API reference of the evidence anchoring service: every operation of API v2 and v1, generated from the OpenAPI document the server validates with.">
<title>API reference — Evidence anchoring service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="stylesheet" href="/docs/overrides.css">
</head>
<body>
<nav aria-label="Site" style="font:600 1rem/1.5 system-ui,sans-serif;padding:.75rem 1.25rem;border-bottom:1px solid #c8c8c8;display:flex;flex-wrap:wrap;gap:1rem"><a href="/">Evidence anchoring service</a><a href="/dashboard">Dashboard</a><a href="/#check-file-heading">Check a file or a hash</a><a href="/api/openapi.json">OpenAPI document (JSON)</a></nav>
<div id="swagger-ui"><noscript>The interactive reference needs JavaScript; the document itself is at <a href="/api/openapi.json">/api/openapi.json</a>.</noscript></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;
