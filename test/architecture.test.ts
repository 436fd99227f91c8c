/**
 * The layers, as the import statements of lib/ and functions/ draw them (docs/architecture.md "Layout"):
 *
 *     entry      functions/<area>/<endpoint>.ts, functions/jobs/
 *     delivery   lib/http, lib/web, lib/cli, lib/local
 *     wiring     lib/deps (the one composition root), lib/config.ts and lib/config/, lib/health.ts
 *     domain     lib/evidence, lib/accounts, lib/webhooks
 *     adapters   lib/crypto, lib/ledger, lib/store, lib/pdf, lib/net
 *     base       lib/log.ts, lib/errors.ts, lib/state-machines.ts, lib/package-files.ts, lib/types.d.ts
 *
 * Every file under lib/ and functions/ belongs to exactly one layer (a file in a folder the map
 * does not name fails the test), and the rules below say which imports may not be made.
 * Static imports, re-exports, dynamic import() and require() all count; type-only imports too (a
 * type import up the layers is the first step of a real one).
 *
 * Beside the layers: the adapters do not lean on each other (rules 9–12: lib/crypto is the
 * primitives the others may use, and imports none of them), nothing that ships imports the tests
 * or the benchmarks (13), and the tools around the service, infra/ (deployment) and bench/
 * (measurements), are held to what they may reach (14, 15).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The layer map: a folder (or a file) → its layer. The longest matching entry wins. */
const LAYERS = {
  entry: ['functions'],
  delivery: ['lib/http', 'lib/web', 'lib/cli', 'lib/local'],
  wiring: ['lib/deps', 'lib/config.ts', 'lib/config', 'lib/health.ts'],
  domain: ['lib/evidence', 'lib/accounts', 'lib/webhooks'],
  adapters: ['lib/crypto', 'lib/ledger', 'lib/store', 'lib/pdf', 'lib/net'],
  base: ['lib/log.ts', 'lib/errors.ts', 'lib/state-machines.ts', 'lib/memo.ts', 'lib/work-slots.ts', 'lib/package-files.ts', 'lib/types.d.ts'],
} as const;
type Layer = keyof typeof LAYERS;

const { entry: ENTRY, delivery: DELIVERY, wiring: WIRING, domain: DOMAIN, adapters: ADAPTERS, base: BASE } = LAYERS;

/**
 * The domain's ports: the interfaces it owns for what it stores and the records (and their pure
 * helpers) that cross them. The store implements them (lib/store/*-table.ts), so an adapter may
 * import these modules of the domain and no other.
 */
const PORTS = [
  'lib/evidence/ports.ts',
  'lib/evidence/records.ts',
  'lib/evidence/batch-store.ts',
  'lib/evidence/archive-store.ts',
  'lib/evidence/stats.ts',
  'lib/accounts/account-repository.ts',
  'lib/accounts/api-key-repository.ts',
  'lib/accounts/counter-repository.ts',
  'lib/accounts/meter-repository.ts',
  'lib/evidence/activity.ts',
  'lib/accounts/tiers.ts',
  'lib/webhooks/records.ts',
];

/**
 * The modules of test/support that bench/ may import, and why: each is a harness the tests prove
 * (the crash harness behind the crash-point sweep, the bundler settings serverless.yml uses, the
 * client's anchor body, the pkijs TSA and its verifier that the differential tests keep as an
 * oracle; pkijs's chain engine, the path oracle, and the token builder of the adversarial tests,
 * which bench/asn1-stack.ts measures our path validation against), so that a benchmark measures
 * exactly what the tests check. A new one must be added here with its reason; bench/ imports
 * nothing else of test/.
 */
const BENCH_TEST_SUPPORT = [
  'test/support/crash-harness',
  'test/support/serverless-esbuild',
  'test/support/client',
  'test/support/pkijs-tsa-issue',
  'test/support/pkijs-tsa-verify',
  'test/support/pkijs-chain',
  'test/crypto/tsa-token-builder',
];

/**
 * The oracles of the differential tests: the pkijs verifier, the pkijs token builder, their
 * helpers and path validation, and the adversarial tests' token builder. Each imports only
 * libraries (pkijs, asn1js, node:, @noble/*) and the other oracles: an oracle that shared the code
 * it checks would share its bugs.
 */
const ORACLES = [
  'test/support/pkijs-chain.ts',
  'test/support/pkijs-common.ts',
  'test/support/pkijs-tsa-decode.ts',
  'test/support/pkijs-tsa-issue.ts',
  'test/support/pkijs-tsa-verify.ts',
  'test/crypto/tsa-token-builder.ts',
];

/** The imports of an oracle that are neither a library nor another oracle. */
export function oracleLeaks(oracleImports: Import[]): string[] {
  const oracles = ORACLES.map((o) => o.replace(/\.ts$/, ''));
  return oracleImports.filter((i) => !i.external && !oracles.includes(i.to)).map((i) => `${i.from} imports ${i.to}`);
}

interface Rule {
  name: string;
  /** Who may not import… */
  importers: readonly string[];
  /** …anything in these… */
  forbidden: readonly string[];
  /** …but these. */
  except?: readonly string[];
  why: string;
}

/** The rules. Each must hold on the real code, and each is shown to catch a planted violation. */
export const RULES: readonly Rule[] = [
  {
    name: '1. domain ↛ wiring',
    importers: DOMAIN,
    forbidden: WIRING,
    why: 'the domain receives its dependencies and settings as parameters from lib/deps; it never reads the configuration, and owns the types the configuration fills in (tiers)',
  },
  {
    name: '2. domain ↛ delivery, functions',
    importers: DOMAIN,
    forbidden: [...DELIVERY, ...ENTRY],
    why: 'the domain throws DomainError and knows no HTTP, page, CLI, local stack or Lambda handler',
  },
  {
    name: '3. adapters ↛ domain, but its ports',
    importers: ADAPTERS,
    forbidden: DOMAIN,
    except: PORTS,
    why: 'an adapter knows no domain logic: it implements the ports the domain owns and may import those (the interfaces and the records they carry), nothing else; a model the domain hands to an adapter is the adapter\'s (lib/pdf/certificate-model.ts); lib/deps plugs the adapters in',
  },
  {
    name: '4. adapters ↛ wiring, delivery, functions',
    importers: ADAPTERS,
    forbidden: [...WIRING, ...DELIVERY, ...ENTRY],
    why: 'an adapter takes its clients and settings in its constructor; it never reads the configuration nor serves a request',
  },
  {
    name: '5. http ↛ functions, local, cli, web',
    importers: ['lib/http'],
    forbidden: ['functions', 'lib/local', 'lib/cli', 'lib/web'],
    why: 'the HTTP layer (app factory, middleware, routes, schemas) serves the functions and the pages, not the other way round',
  },
  {
    name: '6. web ↛ cli, functions, local',
    importers: ['lib/web'],
    forbidden: ['lib/cli', 'functions', 'lib/local'],
    why: 'the pages render what the functions hand them; what they share with the CLI (verification) comes from the domain, not from the CLI',
  },
  {
    name: '7. cli ↛ functions, web, http',
    importers: ['lib/cli'],
    forbidden: ['functions', 'lib/web', 'lib/http'],
    why: 'the CLIs are clients: they reach the service over HTTP or the domain through lib/deps, and share no code with its handlers, pages or HTTP layer',
  },
  {
    name: '8. wiring ↛ functions, delivery',
    importers: WIRING,
    forbidden: [...ENTRY, ...DELIVERY],
    why: 'the composition root builds what the functions and the delivery layers use; it never depends on one of them',
  },
  {
    name: '9. crypto ↛ store, ledger, pdf',
    importers: ['lib/crypto'],
    forbidden: ['lib/store', 'lib/ledger', 'lib/pdf'],
    why: 'lib/crypto holds the primitives (hashes, signatures, DER, CMS, RFC 3161, ERS) that the other adapters build on; it imports no other adapter, so that it can be checked, replaced and bundled alone',
  },
  {
    name: '10. store ↛ ledger, pdf',
    importers: ['lib/store'],
    forbidden: ['lib/ledger', 'lib/pdf'],
    why: 'the store keeps records in DynamoDB; it may encode them with lib/crypto (the archive table writes RFC 4998 records, lib/crypto/ers) but knows nothing of the chain or of documents',
  },
  {
    name: '11. ledger ↛ store, pdf, but the store\'s conditional-write test',
    importers: ['lib/ledger'],
    forbidden: ['lib/store', 'lib/pdf'],
    except: ['lib/store/dynamo'],
    why: 'the ledger adapter talks to the chain; its own DynamoDB items (the nonce lease, the sent transactions) come through the client lib/deps hands it, and it shares with the store only the one test of a failed conditional write (lib/store/dynamo.ts isConditionalCheckFailed), so that both read a lost race the same way',
  },
  {
    name: '12. pdf ↛ store, ledger',
    importers: ['lib/pdf'],
    forbidden: ['lib/store', 'lib/ledger'],
    why: 'the PDF adapter renders and signs the model it is handed (its CMS and DER from lib/crypto); it reads no table and no chain',
  },
  {
    name: '13. lib, functions, infra ↛ test, bench',
    importers: ['lib', 'functions', 'infra'],
    forbidden: ['test', 'bench'],
    why: 'what ships (the Lambdas, the local stack, the CLIs) and what deploys it never depends on the tests or the benchmarks: they are not in the package and may change freely',
  },
  {
    name: '14. infra ↛ lib, functions, but the local chain history',
    importers: ['infra'],
    forbidden: ['lib', 'functions'],
    except: ['lib/local/chain-history.cjs'],
    why: 'the deployment tools read the registry (infra/functions.json, tables.json) and generate the template from it; they do not load the service (the Hardhat config alone installs the local chain\'s history recorder, lib/local/chain-history.cjs)',
  },
  {
    name: '15. bench ↛ test, but the shared harnesses',
    importers: ['bench'],
    forbidden: ['test'],
    except: BENCH_TEST_SUPPORT,
    why: 'a benchmark drives the service (lib/, functions/) as the tests do, and shares with them only the harnesses listed in BENCH_TEST_SUPPORT, each with its reason; anything else it needs lives in bench/lib',
  },
];

interface Import {
  from: string;
  /** A repository path (relative imports, resolved; .js → the .ts/.tsx source), or a package name. */
  to: string;
  external: boolean;
}

const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|\brequire\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The imports of one source text: relative ones resolved to repository paths, packages by name. */
export function importsOf(file: string, text: string): Import[] {
  const out: Import[] = [];
  // Comments may quote import statements; they are not imports.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  for (const m of code.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? m[4];
    if (!spec || spec.startsWith('node:')) continue;
    if (!spec.startsWith('.')) {
      out.push({ from: file, to: spec, external: true });
      continue;
    }
    const to = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '');
    out.push({ from: file, to, external: false });
  }
  return out;
}

/** Every file under `dir` (any kind: the layer map must cover them all). */
function allFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

const isSource = (f: string) => /\.(ts|tsx|mts|mjs|cjs)$/.test(f) && !/\.d\.m?ts$/.test(f);
const inside = (p: string, folders: readonly string[]) => folders.some((f) => p === f || p.startsWith(`${f}/`) || p === f.replace(/\.tsx?$/, ''));

/** The layer of a repository path (a file, or an import's target without extension); undefined when the map does not name it. */
export function layerOf(p: string): Layer | undefined {
  let best: { layer: Layer; length: number } | undefined;
  for (const [layer, entries] of Object.entries(LAYERS) as [Layer, readonly string[]][]) {
    for (const entry of entries) {
      if (inside(p, [entry]) && (!best || entry.length > best.length)) best = { layer, length: entry.length };
    }
  }
  return best?.layer;
}

/** Every import that breaks one of the rules, one line each. */
export function violations(imports: Import[], rules: readonly Rule[] = RULES): string[] {
  const out: string[] = [];
  for (const { from, to, external } of imports) {
    if (external) continue;
    for (const rule of rules) {
      if (inside(from, rule.importers) && inside(to, rule.forbidden) && !inside(to, rule.except ?? [])) out.push(`${from} imports ${to}: rule ${rule.name}: ${rule.why}`);
    }
  }
  return out;
}

/** Imports of a package family that a domain file makes (the domain owns ports; the store implements them). */
export function domainImportsOf(imports: Import[], packagePrefix: string): string[] {
  return imports.filter((i) => i.external && i.to.startsWith(packagePrefix) && inside(i.from, DOMAIN)).map((i) => `${i.from} imports ${i.to}`);
}

const files = [...allFiles('lib'), ...allFiles('functions')];
const sources = files.filter(isSource);
/** The tools around the service, held by rules 13–15 (not layers of it). */
const toolSources = [...allFiles('infra'), ...allFiles('bench')].filter((f) => isSource(f) && !f.startsWith('bench/results/'));
const imports = sources.flatMap((f) => importsOf(f, readFileSync(path.join(ROOT, f), 'utf8')));
const toolImports = toolSources.flatMap((f) => importsOf(f, readFileSync(path.join(ROOT, f), 'utf8')));

describe('the layers of lib/ and functions/', () => {
  it('finds the import statements it judges (the reader has not rotted)', () => {
    assert.ok(sources.length > 100, `${sources.length} files`);
    assert.ok(imports.some((i) => i.from === 'functions/v2/evidence-anchor.ts' && i.to === 'lib/http/routes/evidence-anchor'));
    assert.ok(imports.some((i) => i.from === 'lib/evidence/anchor.ts' && i.to.startsWith('lib/')), 'the domain imports something');
    assert.ok(imports.some((i) => i.from === 'lib/deps/pq-key.ts' && i.to === 'lib/deps/anchoring'), 'dynamic import() is read');
    assert.ok(imports.some((i) => i.from === 'lib/store/dynamo.ts' && i.external && i.to === '@aws-sdk/lib-dynamodb'), 'package imports are read');
    assert.ok(toolImports.some((i) => i.from === 'infra/hardhat.config.cjs' && i.to === 'lib/local/chain-history.cjs'), 'require() is read');
    assert.ok(toolImports.some((i) => i.from === 'bench/sweep.ts' && i.to === 'test/support/crash-harness'), 'bench/ is read');
    assert.ok(toolImports.some((i) => i.from === 'infra/check-template.ts' && i.to === 'infra/template-rules'), 'infra/ is read');
  });

  it('maps every file under lib/ and functions/ to a layer (a new folder must be placed first)', () => {
    assert.deepEqual(files.filter((f) => layerOf(f) === undefined), []);
    assert.equal(layerOf('lib/newfolder/x.ts'), undefined, 'an unmapped folder is not guessed');
    assert.equal(layerOf('lib/new-file.ts'), undefined, 'nor an unmapped file at the top of lib/');
    assert.equal(layerOf('lib/http/routes/evidence-anchor'), 'delivery');
    assert.equal(layerOf('lib/config'), 'wiring', 'an import target without its extension');
    assert.equal(layerOf('lib/config/presets.ts'), 'wiring', 'the parts of lib/config.ts are wiring too');
  });

  it('states fifteen rules, each with its reason', () => {
    assert.equal(RULES.length, 15);
    for (const rule of RULES) assert.ok(rule.why.length > 40 && rule.importers.length > 0 && rule.forbidden.length > 0, rule.name);
  });

  it('flags a planted violation of each rule, and neither a comment nor an import down the layers', () => {
    const planted: [number, string, string][] = [
      [1, 'lib/accounts/x.ts', "import type { Config } from '../config.js';"],
      [2, 'lib/evidence/x.ts', "import { notFound } from '../http/errors.js';"],
      [3, 'lib/pdf/x.ts', "import type { CertificateModel } from '../evidence/certificate.js';"],
      [4, 'lib/ledger/x.ts', "const { getDb } = await import('../deps/core.js');"],
      [5, 'lib/http/x.ts', "export { app } from '../../functions/v2/evidence-anchor.js';"],
      [6, 'lib/web/x.ts', "import { verifyReceipt } from '../cli/verify-receipt.js';"],
      [7, 'lib/cli/x.ts', "import { runQuotaReset } from '../../functions/jobs/quota-reset.js';"],
      [8, 'lib/deps/x.ts', "import { createApp } from '../http/app.js';"],
      [9, 'lib/crypto/x.ts', "import { isConditionalCheckFailed } from '../store/dynamo.js';"],
      [10, 'lib/store/x.ts', "import { RpcReader } from '../ledger/rpc-reader.js';"],
      [11, 'lib/ledger/x.ts', "import { EvidenceTable } from '../store/evidence-table.js';"],
      [12, 'lib/pdf/x.ts', "import { RpcReader } from '../ledger/rpc-reader.js';"],
      [13, 'lib/local/x.ts', "import { waitFor } from '../../test/support/wait.js';"],
      [14, 'infra/x.cjs', "const { loadConfig } = require('../lib/config.js');"],
      [15, 'bench/x.ts', "import { waitFor } from '../test/support/wait.js';"],
    ];
    for (const [n, file, text] of planted) {
      const found = violations(importsOf(file, text));
      assert.equal(found.length, 1, `rule ${n}: ${found.join('\n')}`);
      assert.match(found[0] ?? '', new RegExp(`rule ${n}\\. `));
    }
    const allowed = violations([
      ...importsOf('lib/evidence/y.ts', "// import { getConfig } from '../deps/core.js';\nimport { log } from '../log.js';"),
      ...importsOf('lib/evidence/z.ts', "import type { CertificateModel } from '../pdf/certificate-model.js';"),
      ...importsOf('lib/deps/y.ts', "import { renderCertificate } from '../pdf/certificate-pdf.js';"),
      ...importsOf('lib/web/y.ts', "import { problemTypePath } from '../http/problem-titles.js';"),
      ...importsOf('functions/v2/y.ts', "import { getConfig } from '../../lib/deps/core.js';"),
      ...importsOf('lib/store/y.ts', "import type { EvidenceItemStore } from '../evidence/ports.js';"),
      ...importsOf('lib/store/z.ts', "import { buildEvidenceRecord } from '../crypto/ers.js';"),
      ...importsOf('lib/ledger/y.ts', "import { isConditionalCheckFailed } from '../store/dynamo.js';"),
      ...importsOf('lib/pdf/y.ts', "import { readDer } from '../crypto/tsa/der.js';"),
      ...importsOf('infra/hardhat.config.cjs', "const { installChainHistory } = require('../lib/local/chain-history.cjs');"),
      ...importsOf('bench/y.ts', "import { runCrashExperiment } from '../test/support/crash-harness.js';\nimport { anchorEvidence } from '../lib/evidence/anchor.js';"),
    ]);
    assert.deepEqual(allowed, []);
    // The ports are the only way in: an adapter that imports a domain service is flagged.
    const service = violations(importsOf('lib/store/z.ts', "import { anchorEvidence } from '../evidence/anchor.js';"));
    assert.equal(service.length, 1, service.join('\n'));
  });

  it('finds the ports it lets the adapters import', () => {
    for (const port of PORTS) assert.ok(files.includes(port), `${port} is not a file`);
    assert.ok(imports.some((i) => i.from === 'lib/store/batch-table.ts' && i.to === 'lib/evidence/batch-store'), 'the store implements a port of the domain');
  });

  it('has no import that breaks a rule', () => {
    assert.deepEqual(violations(imports), []);
  });

  it('has no import of infra/ or bench/ that breaks a rule, and bench/ imports each shared harness it is allowed', () => {
    assert.ok(toolSources.length > 20, `${toolSources.length} files`);
    assert.deepEqual(violations(toolImports), []);
    // The list of allowed harnesses is exact: one bench/ no longer needs is taken off it.
    const used = new Set(toolImports.filter((i) => i.from.startsWith('bench/') && i.to.startsWith('test/')).map((i) => i.to));
    assert.deepEqual([...used].sort(), [...BENCH_TEST_SUPPORT].sort());
  });

  it('keeps the differential tests\' oracles independent: they import libraries and each other, nothing of ours', () => {
    const oracleImports = ORACLES.flatMap((f) => importsOf(f, readFileSync(path.join(ROOT, f), 'utf8')));
    assert.ok(oracleImports.some((i) => i.from === 'test/support/pkijs-tsa-verify.ts' && i.to === 'test/support/pkijs-common'), 'the oracles are read');
    assert.deepEqual(oracleLeaks(oracleImports), []);
    assert.deepEqual(oracleLeaks(importsOf('test/support/pkijs-tsa-verify.ts', "import type { CheckOutcome } from '../../lib/crypto/tsa/verify.js';")), [
      'test/support/pkijs-tsa-verify.ts imports lib/crypto/tsa/verify',
    ]);
  });

  it('keeps the AWS SDK out of the domain: the store implements its ports', () => {
    assert.deepEqual(domainImportsOf(importsOf('lib/accounts/x.ts', "import { GetCommand } from '@aws-sdk/lib-dynamodb';"), '@aws-sdk/'), ['lib/accounts/x.ts imports @aws-sdk/lib-dynamodb']);
    assert.deepEqual(domainImportsOf(importsOf('lib/store/x.ts', "import { GetCommand } from '@aws-sdk/lib-dynamodb';"), '@aws-sdk/'), []);
    assert.deepEqual(domainImportsOf(imports, '@aws-sdk/'), []);
  });

  it('keeps the base at the bottom: it imports nothing of lib/ but the base', () => {
    const up = imports.filter((i) => !i.external && inside(i.from, BASE) && i.to.startsWith('lib/') && !inside(i.to, BASE));
    assert.deepEqual(up.map((i) => `${i.from} imports ${i.to}`), []);
  });

  it('keeps the wiring in lib/deps: no domain or adapter folder holds a composition module', () => {
    const wiring = sources.filter((f) => inside(f, [...DOMAIN, ...ADAPTERS]) && /(^|\/|-)deps\.ts$/.test(f));
    assert.deepEqual(wiring, []);
  });
});
