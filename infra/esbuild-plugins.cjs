'use strict';
/**
 * esbuild plugins for serverless-esbuild (serverless.yml custom.esbuild.plugins).
 * `forbid-local-stack`: a Lambda bundle must never contain the embedded stack (lib/local) or
 * what only it uses (hardhat, dynalite: hundreds of MB and native binaries). The build fails
 * with the importing file named instead of shipping them.
 */
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

module.exports = [forbidLocalStack];
module.exports.forbidLocalStack = forbidLocalStack;
