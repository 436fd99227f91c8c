'use strict';
/**
 * esbuild plugins for serverless-esbuild (serverless.yml custom.esbuild.plugins); the exported
 * array is the plugin list, in order.
 *
 * `forbid-local-stack`: a Lambda bundle must never contain the embedded stack (lib/local) or
 * what only it uses (hardhat, dynalite: hundreds of MB and native binaries). The build fails
 * with the importing file named instead of shipping them.
 *
 * `liboqs-wasm-import`: each algorithm of @oqs/liboqs-js loads its Emscripten module (the WASM
 * inlined in `dist/<algorithm>.min.js`) with `import(modulePath)`, a variable esbuild cannot
 * follow: the bundle would look for `../../../../dist/…` next to itself at run time and fail.
 * The plugin rewrites that call to a literal import of the Node build, so the module is bundled.
 * If a liboqs-js release loads its module differently, the build fails instead.
 *
 * `zod-english-locale-only`: zod 4's classic entry re-exports `locales`, a namespace of all its
 * 64 locales (~258 KB minified in every bundle), which nothing here uses: zod's default locale is
 * English, imported by zod itself from `locales/en.js`. The plugin loads `zod/v4/locales/index.js`
 * as English only, so error messages stay byte for byte the same; `z.locales.<other>` would be
 * undefined in a bundle.
 *
 * `aws-sdk-require`: the AWS SDK stays outside the bundle (the nodejs24.x runtime ships v3, and
 * serverless.yml excludes `@aws-sdk/*`), but is loaded with require() instead of an ESM `import`.
 * The SDK's packages are CommonJS; importing them from ESM makes Node parse every file again to
 * find its named exports (cjs-module-lexer), which bench/cold-start.ts measures at tens of ms of
 * each cold start. The bundle's banner defines `require` (createRequire) and esbuild's __toESM
 * gives the same named bindings. The plugin resolves `@aws-sdk/*` before the `external` option
 * would and leaves only the inner require() external.
 *
 * `inline-font-files` and `inline-docs-files` (inlinePackageFiles below): lib/pdf/font-files.ts reads the certificate's TrueType fonts from
 * node_modules, which a Lambda does not have. In a bundle the module is replaced by one that
 * imports the files named in its FONT_FILES with esbuild's binary loader (the bytes inside the
 * bundle), exporting the same loadFontFiles(). Only the certificate function imports it.
 *
 * `openapi-sources`: functions/openapi-sources.ts imports the modules the OpenAPI document is
 * built from by their paths in infra/functions.json, which esbuild cannot follow. In a bundle the
 * module is replaced by static imports of the same list (infra/registry.cjs openApiSources), so
 * the registry stays the only list of documented functions and the openapi bundle still holds
 * every app it documents.
 *
 * `registry-route-fields`: infra/functions.json holds, per function, deployment data no function
 * reads at run time (table access, KMS needs, OpenAPI sources, bundle budgets and their notes).
 * In a bundle it is loaded as its HTTP routes with only the fields of ROUTE_FIELDS in
 * lib/http/registry.ts, the one module a Lambda reads the registry through; the deployment data
 * would otherwise weigh on every bundle that answers 405 or serves the document.
 */
const { readFile } = require('node:fs/promises');
const path = require('node:path');

const FORBIDDEN_PACKAGES = /^(hardhat|dynalite)(\/|$)/;
const LOCAL_DIR = `${path.sep}lib${path.sep}local${path.sep}`;

const forbidLocalStack = {
  name: 'forbid-local-stack',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const fromLocal = args.path.startsWith('.') && path.resolve(args.resolveDir, args.path).includes(LOCAL_DIR);
      if (FORBIDDEN_PACKAGES.test(args.path) || fromLocal) {
        return { errors: [{ text: `"${args.path}" (imported by ${path.relative(process.cwd(), args.importer)}) must not be bundled into a Lambda: it belongs to the local stack only` }] };
      }
      return undefined;
    });
  },
};

const LIBOQS_ALGORITHM_FILE = /[\\/]node_modules[\\/]@oqs[\\/]liboqs-js[\\/]src[\\/]algorithms[\\/].+\.js$/;
// `const modulePath = isDeno ? '…/dist/<algorithm>.deno.js' : '…/dist/<algorithm>.min.js';`
const LIBOQS_NODE_MODULE_PATH = /:\s*([`'"])((?:\.\.\/)+dist\/[\w.-]+\.min\.js)\1/g;
const LIBOQS_VARIABLE_IMPORT = 'import(modulePath)';

const liboqsWasmImport = {
  name: 'liboqs-wasm-import',
  setup(build) {
    build.onLoad({ filter: LIBOQS_ALGORITHM_FILE }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const targets = [...source.matchAll(LIBOQS_NODE_MODULE_PATH)];
      const calls = source.split(LIBOQS_VARIABLE_IMPORT).length - 1;
      if (targets.length !== 1 || calls !== 1) {
        return {
          errors: [{
            text: `@oqs/liboqs-js loads its module in an unexpected way in ${path.relative(process.cwd(), args.path)} ` +
              `(${targets.length} Node module paths, ${calls} × "${LIBOQS_VARIABLE_IMPORT}"): update the liboqs-wasm-import plugin`,
          }],
        };
      }
      const literal = JSON.stringify(targets[0][2]);
      return { contents: source.replace(LIBOQS_VARIABLE_IMPORT, `import(${literal})`), loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

const ZOD_LOCALES_INDEX = /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/;

const zodEnglishLocaleOnly = {
  name: 'zod-english-locale-only',
  setup(build) {
    build.onLoad({ filter: ZOD_LOCALES_INDEX }, (args) => ({
      contents: "export { default as en } from './en.js';",
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};

const SDK_NAMESPACE = 'aws-sdk-require';

const awsSdkRequire = {
  name: 'aws-sdk-require',
  setup(build) {
    build.onResolve({ filter: /^@aws-sdk\// }, (args) => {
      // The inner require() of the stub below stays external; the import itself loads the stub.
      if (args.namespace === SDK_NAMESPACE) return { path: args.path, external: true };
      return { path: args.path, namespace: SDK_NAMESPACE };
    });
    build.onLoad({ filter: /.*/, namespace: SDK_NAMESPACE }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * A module that reads files of npm packages at run time (a `const <TABLE> = { key: 'pkg/file', … }`
 * and an async `<load>()`) is replaced in a bundle by one that imports the same files with an
 * esbuild loader, so the bytes travel inside the bundle and the same `<load>()` answers them.
 */
function inlinePackageFiles({ name, module, table, load, extension, files: filesFilter, loader }) {
  const entry = new RegExp(`(\\w+): '([^']+\\.${extension})'`, 'g');
  return {
    name,
    setup(build) {
      build.onLoad({ filter: module }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        const files = [...source.matchAll(entry)];
        if (files.length === 0) return { errors: [{ text: `no ${table} entries found in ${path.relative(process.cwd(), args.path)}: update the ${name} plugin` }] };
        const lines = files.map(([, , file], i) => `import file${i} from ${JSON.stringify(require.resolve(file))};`);
        lines.push(`const files = { ${files.map(([, key], i) => `${key}: file${i}`).join(', ')} };`);
        lines.push(`export const ${table} = {};`);
        lines.push(`export function ${load}() { return Promise.resolve(files); }`);
        return { contents: lines.join('\n'), loader: 'js', resolveDir: path.dirname(args.path) };
      });
      // Only the files of the package named: a filter on the extension alone would take every .js.
      build.onLoad({ filter: filesFilter }, async (args) => ({ contents: await readFile(args.path), loader }));
    },
  };
}

/** lib/pdf/font-files.ts: the certificate's TrueType fonts (binary). */
const inlineFontFiles = inlinePackageFiles({
  name: 'inline-font-files',
  module: /[\\/]lib[\\/]pdf[\\/]font-files\.ts$/,
  table: 'FONT_FILES',
  load: 'loadFontFiles',
  extension: 'ttf',
  files: /\.ttf$/,
  loader: 'binary',
});

/** lib/web/docs-files.ts: Swagger UI's script and style sheet for /docs (text). */
const inlineDocsFiles = inlinePackageFiles({
  name: 'inline-docs-files',
  module: /[\\/]lib[\\/]web[\\/]docs-files\.ts$/,
  table: 'DOCS_FILES',
  load: 'loadDocsFiles',
  extension: '(?:js|css)',
  files: /[\\/]node_modules[\\/]swagger-ui-dist[\\/]swagger-ui(?:-bundle\.js|\.css)$/,
  loader: 'text',
});

const ROOT = path.resolve(__dirname, '..');

const openApiSources = {
  name: 'openapi-sources',
  setup(build) {
    build.onLoad({ filter: /[\\/]functions[\\/]openapi-sources\.ts$/ }, () => {
      const registry = require('./registry.cjs');
      const problems = registry.validateRegistry();
      if (problems.length > 0) return { errors: problems.map((text) => ({ text: `infra/functions.json: ${text}` })) };
      const sources = registry.openApiSources();
      const lines = sources.map((s, i) => `import { ${s.export} as source${i} } from ${JSON.stringify(`./${s.module}`)};`);
      const entries = sources.map((s, i) => `${JSON.stringify(s.name)}: source${i}${s.call ? '()' : ''}`);
      lines.push(`export function loadDocumentedApps() { return Promise.resolve({ ${entries.join(', ')} }); }`);
      return { contents: lines.join('\n'), loader: 'ts', resolveDir: ROOT };
    });
  },
};

const REGISTRY_JSON = /[\\/]infra[\\/]functions\.json$/;
const ROUTE_FIELDS = /export const ROUTE_FIELDS = \[([^\]]*)\] as const;/;

const registryRouteFields = {
  name: 'registry-route-fields',
  setup(build) {
    build.onLoad({ filter: REGISTRY_JSON }, async (args) => {
      const routes = path.join(ROOT, 'lib', 'http', 'registry.ts');
      const fields = [...(ROUTE_FIELDS.exec(await readFile(routes, 'utf8'))?.[1] ?? '').matchAll(/'(\w+)'/g)].map((m) => m[1]);
      if (fields.length === 0) return { errors: [{ text: `no ROUTE_FIELDS found in ${path.relative(process.cwd(), routes)}: update the registry-route-fields plugin` }] };
      const registry = JSON.parse(await readFile(args.path, 'utf8'));
      const http = registry.http.map((fn) => Object.fromEntries(fields.filter((f) => f in fn).map((f) => [f, fn[f]])));
      return { contents: JSON.stringify({ http }), loader: 'json' };
    });
  },
};

module.exports = [forbidLocalStack, liboqsWasmImport, zodEnglishLocaleOnly, awsSdkRequire, inlineFontFiles, inlineDocsFiles, openApiSources, registryRouteFields];
module.exports.openApiSources = openApiSources;
module.exports.registryRouteFields = registryRouteFields;
module.exports.inlineDocsFiles = inlineDocsFiles;
module.exports.inlineFontFiles = inlineFontFiles;
module.exports.forbidLocalStack = forbidLocalStack;
module.exports.liboqsWasmImport = liboqsWasmImport;
module.exports.zodEnglishLocaleOnly = zodEnglishLocaleOnly;
module.exports.awsSdkRequire = awsSdkRequire;
