import type { BuildOptions } from 'esbuild';

/** The banner of serverless.yml custom.esbuild: CommonJS dependencies bundled into ESM still call require(). */
export const BANNER = "import { createRequire as __esbuildCreateRequire } from 'node:module'; const require = __esbuildCreateRequire(import.meta.url);";

/**
 * serverless.yml custom.esbuild as esbuild options (`exclude` is serverless-esbuild's `external`),
 * without the plugins (infra/esbuild-plugins.cjs). test/infra/lambda-bundle.test.ts checks that
 * serverless.yml says the same; bench/cold-start.ts builds with them.
 */
export const SERVERLESS_ESBUILD: Readonly<BuildOptions> = {
  bundle: true,
  minify: true,
  keepNames: false,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  mainFields: ['module', 'main'],
  external: ['@aws-sdk/*'],
  banner: { js: BANNER },
};
