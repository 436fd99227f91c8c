'use strict';
/**
 * serverless.yml `functions:` generated from infra/functions.json (`${file(./infra/serverless-functions.cjs)}`).
 * One Lambda per registry entry, each with its own IAM role (built in serverless-resources.cjs).
 * osls calls the exported function; tests call it directly.
 */

const registry = require('./registry.cjs');

/**
 * The osls `stream` event of a stream function (osls lib/plugins/aws/package/compile/events/stream.js
 * turns it into an AWS::Lambda::EventSourceMapping): its table's stream, its entry's batch and
 * windows, and what every stream consumer shares (registry.cjs STREAM_MAPPING: from the oldest
 * change kept, one batch per shard, a failed batch bisected and retried for as long as the stream
 * keeps it, then described in the stream failure queue). osls adds the stream's IAM actions only
 * to its shared role, which this service has none of: serverless-resources.cjs grants them.
 */
function streamEvent(fn) {
  const m = registry.STREAM_MAPPING;
  return {
    stream: {
      type: 'dynamodb',
      arn: { 'Fn::GetAtt': [registry.naming.table(fn.table), 'StreamArn'] },
      startingPosition: m.startingPosition,
      batchSize: fn.batchSize,
      batchWindow: fn.batchWindowSeconds,
      parallelizationFactor: m.parallelizationFactor,
      bisectBatchOnFunctionError: m.bisectBatchOnFunctionError,
      maximumRetryAttempts: m.maximumRetryAttempts,
      maximumRecordAgeInSeconds: m.maximumRecordAgeInSeconds,
      tumblingWindowInSeconds: fn.tumblingWindowSeconds,
      functionResponseType: m.functionResponseType,
      destinations: { onFailure: { type: 'sqs', arn: { 'Fn::GetAtt': [registry.naming.streamFailureQueue, 'Arn'] } } },
    },
  };
}

const DESCRIPTION = {
  http: (fn) => `${fn.method} ${fn.path}`,
  gateway: () => 'ANY <every path>: 405 with Allow',
  scheduled: (fn) => `scheduled ${fn.schedule}`,
  stream: (fn) => `the ${fn.table} table's stream`,
};

const EVENTS = {
  http: (fn) => [{ httpApi: { method: fn.method, path: fn.path } }],
  gateway: () => registry.httpPaths().map((p) => ({ httpApi: { method: '*', path: p } })),
  scheduled: (fn) => [{ schedule: { rate: [fn.schedule], enabled: true } }],
  stream: (fn) => [streamEvent(fn)],
};

/** `{ name → osls function config }` for every function of the registry. */
function buildFunctions() {
  registry.assertValidRegistry();
  const out = {};
  for (const fn of registry.allFunctions()) {
    const sizing =
      fn.kind === 'scheduled' ? registry.SIZING.scheduled : fn.kind === 'stream' ? registry.SIZING.stream : fn.anchoring ? registry.SIZING.anchoring : registry.SIZING.http;
    const config = {
      handler: registry.handlerOf(fn),
      description: DESCRIPTION[fn.kind](fn),
      role: registry.naming.role(fn.name),
      memorySize: sizing.memorySize,
      timeout: sizing.timeout,
      events: EVENTS[fn.kind](fn),
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
module.exports.streamEvent = streamEvent;
