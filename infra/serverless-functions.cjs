'use strict';
/**
 * serverless.yml `functions:` generated from infra/functions.json (`${file(./infra/serverless-functions.cjs)}`).
 * One Lambda per registry entry, each with its own IAM role (built in serverless-resources.cjs).
 * osls calls the exported function; tests call it directly.
 */

const registry = require('./registry.cjs');

/** `{ name → osls function config }` for every HTTP and scheduled function of the registry. */
function buildFunctions() {
  registry.assertValidRegistry();
  const out = {};
  for (const fn of registry.allFunctions()) {
    const sizing = fn.kind === 'scheduled' ? registry.SIZING.scheduled : fn.anchoring ? registry.SIZING.anchoring : registry.SIZING.http;
    const config = {
      handler: registry.handlerOf(fn),
      description:
        fn.kind === 'http' ? `${fn.method} ${fn.path}` : fn.kind === 'gateway' ? 'ANY <every path>: 405 with Allow' : `scheduled ${fn.schedule}`,
      role: registry.naming.role(fn.name),
      memorySize: sizing.memorySize,
      timeout: sizing.timeout,
      events:
        fn.kind === 'http'
          ? [{ httpApi: { method: fn.method, path: fn.path } }]
          : fn.kind === 'gateway'
            ? registry.httpPaths().map((p) => ({ httpApi: { method: '*', path: p } }))
            : [{ schedule: { rate: [fn.schedule], enabled: true } }],
    };
    if (fn.kind === 'scheduled') {
      // A run that still fails after Lambda's two retries lands in the failure queue (alarmed),
      // instead of vanishing: EventBridge invokes scheduled functions asynchronously.
      config.maximumRetryAttempts = 2;
      config.destinations = { onFailure: { type: 'sqs', arn: { 'Fn::GetAtt': [registry.naming.failureQueue, 'Arn'] } } };
    }
    if (fn.reservedConcurrency !== undefined) config.reservedConcurrency = fn.reservedConcurrency;
    if (fn.environment) config.environment = { ...fn.environment };
    out[fn.name] = config;
  }
  return out;
}

module.exports = () => buildFunctions();
module.exports.buildFunctions = buildFunctions;
