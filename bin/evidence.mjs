#!/usr/bin/env node
// The `evidence` command (package.json "bin"): runs the TypeScript sources through tsx's ESM API,
// so the CLI needs no build step. The code lives in lib/cli/evidence.ts.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
const { main } = await import(new URL('../lib/cli/evidence.ts', import.meta.url).href);
process.exitCode = await main(process.argv.slice(2));
