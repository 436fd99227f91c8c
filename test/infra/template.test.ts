import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import type { SpecDatabase } from '@aws-cdk/service-spec-types';
import { type Plugin, build } from 'esbuild';
import type * as Registry from '../../infra/registry.cjs';
import type { KmsKey, RegistryFunction } from '../../infra/registry.cjs';
import {
  type CfnResource,
  type CfnTemplate,
  type DeploymentView,
  type JsonObject,
  type Statement,
  checkLeastPrivilege,
  checkProperties,
  checkReferences,
  checkResourceTypes,
  checkTables,
  roleStatements,
} from '../../infra/template-rules.js';

// The generators are CommonJS because osls loads them with require(); load them the same way.
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const require = createRequire(import.meta.url);
const registry = require('../../infra/registry.cjs') as typeof Registry;
const { buildFunctions } = require('../../infra/serverless-functions.cjs') as {
  buildFunctions(): Record<string, { handler: string; role: string; timeout: number; memorySize: number; environment?: Record<string, string>; events: JsonObject[] }>;
};
const { buildResources, buildStatements } = require('../../infra/serverless-resources.cjs') as {
  buildResources(): { Resources: Record<string, CfnResource>; Outputs: Record<string, JsonObject> };
  buildStatements(fn: RegistryFunction): Statement[];
};
const esbuildPlugins = require('../../infra/esbuild-plugins.cjs') as Plugin[];

const functions = buildFunctions();
const { Resources } = buildResources();

/**
 * The generator output as osls will see it: the generated resources plus what osls creates
 * itself and the alarms name: the log group and the function of every registry function
 * (merge-iam-templates.js; the function only as far as a Ref needs it) the HTTP API and its stage, and the
 * Lambda → role links from `role:`.
 */
function generatedView(resources: Record<string, CfnResource> = Resources): DeploymentView {
  const all: Record<string, CfnResource> = { ...resources };
  for (const fn of registry.allFunctions()) {
    all[registry.naming.logGroup(fn.name)] = { Type: 'AWS::Logs::LogGroup', Properties: { LogGroupName: `/aws/lambda/svc-dev-${fn.name}` } };
    all[registry.naming.lambda(fn.name)] = {
      Type: 'AWS::Lambda::Function',
      Properties: { Code: { ZipFile: 'x' }, Role: { 'Fn::GetAtt': [registry.naming.role(fn.name), 'Arn'] }, Handler: registry.handlerOf(fn), Runtime: 'nodejs24.x' },
    };
  }
  all.HttpApi = { Type: 'AWS::ApiGatewayV2::Api', Properties: { Name: 'svc-dev', ProtocolType: 'HTTP' } };
  all.HttpApiStage = { Type: 'AWS::ApiGatewayV2::Stage', Properties: { ApiId: { Ref: 'HttpApi' }, StageName: '$default', AutoDeploy: true } };
  const placeholders = new Map(
    Object.entries(registry.KMS_KEYS).map(([key, { custom }]) => [`\${self:custom.kms.${custom}}`, key as KmsKey]),
  );
  return {
    resources: all,
    roleOf: (fn) => functions[fn.name]?.role,
    allFunctionRoles: () => new Map(Object.entries(functions).map(([name, f]) => [name, f.role])),
    kmsKeyOf: (value) => placeholders.get(value),
  };
}

const cloneResources = () => structuredClone(Resources);
const policyOf = (resources: Record<string, CfnResource>, fnName: string): Statement[] => {
  const role = resources[registry.naming.role(fnName)];
  const policies = role?.Properties?.Policies as unknown as { PolicyDocument: { Statement: Statement[] } }[];
  return policies[0]!.PolicyDocument.Statement;
};
const problemsOf = (view: DeploymentView) => checkLeastPrivilege(view).flatMap((r) => r.problems);

describe('generated functions', () => {
  test('the registry is consistent', () => {
    assert.deepEqual(registry.validateRegistry(), []);
  });

  test('the registry refuses an entry that lacks, misspells or contradicts what it must say', () => {
    const all = registry.allFunctions();
    /** Every entry, with `name`'s fields changed (undefined: removed). */
    const withChange = (name: string, change: Record<string, unknown>) =>
      all.map((fn) => {
        if (fn.name !== name) return fn;
        const changed: Record<string, unknown> = { ...fn, ...change };
        for (const [key, value] of Object.entries(change)) if (value === undefined) delete changed[key];
        return changed as unknown as RegistryFunction;
      });
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['v2EvidenceHash', { bundle: undefined }, /v2EvidenceHash: bundle must be \{ maxKiB, heavy \}/],
      ['v2EvidenceHash', { bundle: { maxKiB: '319', heavy: [] } }, /v2EvidenceHash: bundle.maxKiB must be a positive whole number/],
      ['v2EvidenceHash', { bundle: { maxKiB: 319, heavy: ['jose', 'jose'] } }, /v2EvidenceHash: bundle.heavy must list package names, each once/],
      ['v2EvidenceHash', { kms: undefined }, /v2EvidenceHash: kms must be an object/],
      ['v2EvidenceHash', { kms: { tsa: 'write' } }, /v2EvidenceHash: unknown KMS use "write" for tsa/],
      ['v2EvidenceHash', { kmss: {} }, /v2EvidenceHash: unknown field "kmss"/],
      ['v2EvidenceHash', { openapi: undefined }, /v2EvidenceHash: openapi must be true/],
      ['v2EvidenceHash', { openapi: { module: 'lib/http/routes/none.ts', export: 'route' } }, /v2EvidenceHash: openapi.module must be an existing/],
      ['v2EvidenceHash', { file: 'functions/v2/none.ts' }, /v2EvidenceHash: file functions\/v2\/none.ts does not exist/],
      ['v2EvidenceHash', { environment: { admin_token: 1 } }, /v2EvidenceHash: environment.admin_token must be/],
      ['v2EvidenceAnchor', { kms: { pqSigner: 'sign', tsa: 'sign' } }, /v2EvidenceAnchor: an anchoring function needs kms.ledgerWallet: "sign"/],
      ['v1ChainAnchor', { kms: { pqSigner: 'sign', tsa: 'sign', ledgerWallet: 'sign' } }, /v1ChainAnchor: an anchoring function needs kms.tsaPq: "sign"/],
      ['v2EvidenceFull', { kms: { pqSigner: 'sign', tsa: 'sign', tsaPq: 'public', ledgerWallet: 'sign' } }, /v2EvidenceFull: an anchoring function needs kms.tsaPq: "sign"/],
      ['reconcile', { openapi: true }, /reconcile: unknown field "openapi"/],
      // Stream consumers: a table that streams old and new images, Lambda's bounds, the shard's window.
      ['evidenceStream', { table: 'chains' }, /evidenceStream: table chains has no StreamSpecification with StreamViewType NEW_AND_OLD_IMAGES/],
      ['evidenceStream', { table: 'nope' }, /evidenceStream: table must name a table of infra\/tables.json/],
      ['evidenceStream', { batchSize: 0 }, /evidenceStream: batchSize must be a whole number from 1 to 10000/],
      ['evidenceStream', { batchWindowSeconds: 301 }, /evidenceStream: batchWindowSeconds must be a whole number from 0 to 300/],
      ['evidenceStream', { tumblingWindowSeconds: 0 }, /evidenceStream: tumblingWindowSeconds must be a whole number from 1 to 900/],
      ['evidenceStream', { reservedConcurrency: 1 }, /evidenceStream: unknown field "reservedConcurrency"/],
      ['evidenceStream', { access: { counters: 'rw', chains: 'bw' } }, /evidenceStream.access.chains: access mode must be letters of r, w, b, d, s in that order/],
      ['v1Stats', { access: { chains: 'b' } }, /v1Stats: a public GET function may write no table, not chains/],
    ];
    for (const [name, change, expected] of cases) {
      const problems = registry.validateRegistry(withChange(name, change));
      assert.ok(problems.some((p) => expected.test(p)), `${name} ${JSON.stringify(change)}: ${JSON.stringify(problems)}`);
    }
  });

  test('every registry function is generated with its handler, its own role and its event', () => {
    const all = registry.allFunctions();
    assert.deepEqual(Object.keys(functions).sort(), all.map((f) => f.name).sort());
    const roles = new Set<string>();
    for (const fn of all) {
      const f = functions[fn.name]!;
      assert.equal(f.handler, `${fn.file.replace(/\.ts$/, '')}.handler`);
      assert.equal(f.role, registry.naming.role(fn.name));
      assert.ok(Resources[f.role], `${fn.name}: role ${f.role} is generated`);
      roles.add(f.role);
      if (fn.kind === 'http') assert.deepEqual(f.events, [{ httpApi: { method: fn.method, path: fn.path } }]);
      else if (fn.kind === 'stream') {
        // Its table's stream, its entry's batch and windows; the rest is checkStreams' policy (operations.test.ts).
        assert.equal(f.events.length, 1, fn.name);
        const stream = f.events[0]!.stream as JsonObject;
        assert.deepEqual(stream.arn, { 'Fn::GetAtt': [registry.naming.table(fn.table!), 'StreamArn'] });
        assert.deepEqual([stream.type, stream.batchSize, stream.batchWindow, stream.tumblingWindowInSeconds], ['dynamodb', fn.batchSize, fn.batchWindowSeconds, fn.tumblingWindowSeconds]);
      } else if (fn.kind === 'gateway') {
        // methodNotAllowed: `ANY` on every distinct path, so each path answers 405 for the other methods.
        const paths = [...new Set(registry.allFunctions().filter((h) => h.kind === 'http').map((h) => h.path))].sort();
        assert.deepEqual(f.events, paths.map((p) => ({ httpApi: { method: '*', path: p } })));
      } else assert.deepEqual(f.events, [{ schedule: { rate: [fn.schedule], enabled: true } }]);
    }
    assert.equal(roles.size, all.length, 'no two functions share a role');
  });

  test('HTTP functions answer before API Gateway gives up at 30 s; anchoring ones get the most time', () => {
    for (const fn of registry.allFunctions().filter((f) => f.kind === 'http')) {
      const f = functions[fn.name]!;
      assert.ok(f.timeout < 30, `${fn.name}: ${f.timeout} s`);
      if (fn.anchoring) assert.ok(f.timeout >= 25 && f.memorySize >= 1024, `${fn.name}: anchoring sizing`);
    }
  });

  test('only the admin function receives ADMIN_TOKEN', () => {
    const holders = Object.entries(functions).filter(([, f]) => f.environment && 'ADMIN_TOKEN' in f.environment).map(([n]) => n);
    assert.deepEqual(holders, ['v2AdminSetTier']);
  });

  test('serverless.yml passes every table name as a Ref to its generated table', () => {
    const yml = readFileSync(path.join(ROOT, 'serverless.yml'), 'utf8');
    for (const [key, def] of Object.entries(registry.TABLES)) {
      assert.match(yml, new RegExp(`^ {4}${def.envVar}: !Ref ${registry.naming.table(key)}$`, 'm'), def.envVar);
    }
    assert.doesNotMatch(yml, /^ {4}AWS_REGION:/m, 'AWS_REGION is reserved by Lambda');
  });
});

describe('generated least-privilege roles', () => {
  test('pass every least-privilege rule of the template check', () => {
    for (const result of checkLeastPrivilege(generatedView())) assert.deepEqual(result.problems, [], result.name);
  });

  test('a function whose access map says r on a table gets no write action on it', () => {
    const fn: RegistryFunction = { name: 'probe', file: 'functions/v1/probe.ts', kind: 'http', method: 'POST', path: '/probe', public: false, access: { evidence: 'r', counters: 'rw' }, kms: {}, bundle: { maxKiB: 300, heavy: [] } };
    const statements = buildStatements(fn);
    const onTable = statements.filter((s) => JSON.stringify(s.Resource) === JSON.stringify([{ 'Fn::GetAtt': ['EvidenceTable', 'Arn'] }]));
    const onIndexes = statements.filter((s) => JSON.stringify(s.Resource).includes('${EvidenceTable.Arn}/index/'));
    assert.deepEqual(onTable.flatMap((s) => s.Action as string[]).sort(), ['dynamodb:BatchGetItem', 'dynamodb:DescribeTable', 'dynamodb:GetItem', 'dynamodb:Query']);
    for (const s of onIndexes) assert.deepEqual(s.Action, ['dynamodb:Query'], 'indexes are only queried');
    assert.ok([...onTable, ...onIndexes].flatMap((s) => s.Action as string[]).every((a) => !registry.WRITE_ACTIONS.has(a)));
    // and the same for every real function with a read-only table
    for (const real of registry.allFunctions()) {
      for (const [table, mode] of Object.entries(real.access).filter(([, m]) => !/[wbd]/.test(m))) {
        const statements = roleStatements(Resources, registry.naming.role(real.name)).filter((s) => JSON.stringify(s.Resource).includes(`"${registry.naming.table(table)}`));
        assert.ok(statements.length > 0, `${real.name}: ${table} (${mode}) is granted`);
        const writes = statements.flatMap((s) => s.Action as string[]).filter((a) => registry.WRITE_ACTIONS.has(a));
        assert.deepEqual(writes, [], `${real.name}: ${table} is ${mode}`);
      }
    }
  });

  test('grant no transactions, no table outside the access map, Scan only to the three jobs that scan, BatchWriteItem only to the evidence stream function (links) and the batch anchor (leaves), stream reads only to the two stream functions', () => {
    // The reconciler's hourly pass and the quota reset's sweep send Scan (lib/evidence/repository.ts
    // scanUnfinished, lib/accounts/counter-repository.ts listHolds and removeExpired), and the archive
    // job's backfill (lib/store/archive-table.ts sweepUngrouped, an operator's invocation); nothing else does.
    const scanners = registry.allFunctions().filter((fn) => JSON.stringify(roleStatements(Resources, registry.naming.role(fn.name))).includes('dynamodb:Scan'));
    assert.deepEqual(scanners.map((fn) => fn.name).sort(), ['archive', 'quotaReset', 'reconcile']);
    // The chain links' anchored marks (lib/store/chain-table.ts putAnchoredLinks) are the one batched
    // write, from the evidence stream; only the two consumers of the evidence table's stream read one
    // (their event source mappings do, with their roles): the derived data and the webhooks' outbox.
    const granting = (action: string) =>
      registry.allFunctions().flatMap((fn) =>
        roleStatements(Resources, registry.naming.role(fn.name))
          .filter((s) => (s.Action as string[]).includes(action))
          .map((s) => `${fn.name} ${JSON.stringify(s.Resource)}`),
      );
    assert.deepEqual(granting('dynamodb:BatchWriteItem').sort(), ['evidenceStream [{"Fn::GetAtt":["ChainsTable","Arn"]}]', 'v2EvidenceAnchorBatch [{"Fn::GetAtt":["BatchesTable","Arn"]}]']);
    for (const action of registry.STREAM_READ_ACTIONS) {
      assert.deepEqual(granting(action), ['evidenceStream [{"Fn::GetAtt":["EvidenceTable","StreamArn"]}]', 'webhookOutbox [{"Fn::GetAtt":["EvidenceTable","StreamArn"]}]'], action);
    }
    for (const fn of registry.allFunctions()) {
      const text = JSON.stringify(roleStatements(Resources, registry.naming.role(fn.name)));
      assert.doesNotMatch(text, /dynamodb:(Transact|ConditionCheck|\*)/, fn.name);
      for (const key of Object.keys(registry.TABLES)) {
        // The table's own ARN or its indexes' (a stream's StreamArn is the stream, checked above).
        const logicalId = registry.naming.table(key);
        const reached = text.includes(`"${logicalId}","Arn"`) || text.includes(`\${${logicalId}.Arn}`);
        if (!(key in fn.access)) assert.ok(!reached, `${fn.name} must not reach ${key}`);
      }
    }
  });

  test('reach KMS keys only as the function needs them', () => {
    const actionsOn = (fnName: string) => {
      const out: Record<string, string[]> = {};
      for (const s of policyOf(Resources, fnName)) {
        const r = JSON.stringify(s.Resource);
        const key = Object.entries(registry.KMS_KEYS).find(([, k]) => r.includes(k.custom))?.[0];
        if (key) out[key] = (s.Action as string[]).slice().sort();
      }
      return out;
    };
    const sign = ['kms:GetPublicKey', 'kms:Sign'];
    for (const anchoring of ['v2EvidenceAnchor', 'v2EvidenceAnchorBatch', 'v2EvidenceFull', 'v1ChainAnchor']) {
      assert.deepEqual(actionsOn(anchoring), { pqSigner: sign, tsa: sign, tsaPq: sign, ledgerWallet: sign }, anchoring);
    }
    assert.deepEqual(actionsOn('v1Timestamp'), { tsa: sign });
    // The post-quantum TSA key signs where ML-DSA-65 tokens are issued, and nowhere else.
    assert.deepEqual(actionsOn('v2Tsa'), { tsa: sign, tsaPq: sign });
    assert.deepEqual(actionsOn('v2EvidenceTimestamp'), { tsa: sign, tsaPq: sign });
    const withPq = registry.allFunctions().filter((fn) => 'tsaPq' in actionsOn(fn.name)).map((fn) => fn.name).sort();
    assert.deepEqual(withPq, ['v1ChainAnchor', 'v2EvidenceAnchor', 'v2EvidenceAnchorBatch', 'v2EvidenceFull', 'v2EvidenceTimestamp', 'v2Tsa']);
    assert.deepEqual(actionsOn('v2AccountInfo'), { jwtSecret: ['kms:Decrypt'] });
    assert.deepEqual(actionsOn('v2EvidenceVerify'), {});
    for (const fn of registry.allFunctions().filter((f) => registry.isPublicRead(f))) {
      assert.ok(!JSON.stringify(actionsOn(fn.name)).includes('kms:Sign'), `${fn.name} is a public read and signs nothing`);
    }
  });

  test('the rules catch a public read that writes, a wildcard, a shared role and an extra key', () => {
    const resources = cloneResources();
    policyOf(resources, 'v1Stats').push({ Effect: 'Allow', Action: ['dynamodb:PutItem'], Resource: [{ 'Fn::GetAtt': ['EvidenceTable', 'Arn'] }] });
    policyOf(resources, 'v1PqInfo').push({ Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' });
    policyOf(resources, 'v1Health').push({ Effect: 'Allow', Action: ['kms:Sign'], Resource: ['${self:custom.kms.pqSignerKeyArn}'] });
    const problems = problemsOf(generatedView(resources)).join('\n');
    assert.match(problems, /v1Stats \(public GET \/api\/v1\/stats\) may write evidence: dynamodb:PutItem/);
    assert.match(problems, /v1Stats: evidence \(access none\) grants dynamodb:PutItem/);
    assert.match(problems, /V1PqInfoIamRole: action "dynamodb:\*" has a wildcard/);
    assert.match(problems, /V1PqInfoIamRole: resource "\*" has a wildcard/);
    assert.match(problems, /v1Health: KMS key pqSigner grants kms:GetPublicKey, kms:Sign; expected kms:GetPublicKey/);

    const shared = generatedView();
    const view: DeploymentView = { ...shared, allFunctionRoles: () => new Map([['a', 'V1HealthIamRole'], ['b', 'V1HealthIamRole']]) };
    assert.match(problemsOf(view).join('\n'), /V1HealthIamRole is shared by a, b/);
  });

  test('the rules catch a stream read elsewhere, a stream function that cannot read its stream or reach its queue, and a queue of the other kind', () => {
    const streamRead = (table: string): Statement => ({ Effect: 'Allow', Action: ['dynamodb:GetRecords'], Resource: [{ 'Fn::GetAtt': [table, 'StreamArn'] }] });
    const sendTo = (queue: string): Statement => ({ Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [{ 'Fn::GetAtt': [queue, 'Arn'] }] });
    const cases: [string, (r: Record<string, CfnResource>) => void, RegExp][] = [
      ['another function reads the stream', (r) => policyOf(r, 'v1Stats').push(streamRead('EvidenceTable')), /v1Stats: the evidence table's stream grants dynamodb:GetRecords; expected \(none\)/],
      ['the stream function reads another table\'s stream', (r) => policyOf(r, 'evidenceStream').push(streamRead('ChainsTable')), /evidenceStream: the chains table's stream grants dynamodb:GetRecords; expected \(none\)/],
      [
        'the stream function cannot read its stream',
        (r) => {
          const statements = policyOf(r, 'evidenceStream');
          statements.splice(statements.findIndex((s) => JSON.stringify(s.Resource).includes('StreamArn')), 1);
        },
        /evidenceStream: the evidence table's stream grants \(none\); expected dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator, dynamodb:ListStreams/,
      ],
      [
        'stream reads granted on the table ARN instead',
        (r) => {
          const s = policyOf(r, 'evidenceStream').find((x) => JSON.stringify(x.Resource).includes('StreamArn'))!;
          s.Resource = [{ 'Fn::GetAtt': ['EvidenceTable', 'Arn'] }];
        },
        /evidenceStream: evidence \(access none\) grants dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator, dynamodb:ListStreams; expected \(none\)/,
      ],
      [
        'the stream function cannot reach its failure queue',
        (r) => {
          const statements = policyOf(r, 'evidenceStream');
          statements.splice(statements.findIndex((s) => JSON.stringify(s.Action).includes('sqs:')), 1);
        },
        /evidenceStream: may send to \(none\); expected StreamFailureQueue/,
      ],
      ['the stream function sends to the scheduled runs\' queue', (r) => policyOf(r, 'evidenceStream').push(sendTo('ScheduledFailureQueue')), /evidenceStream: sqs:SendMessage on .*ScheduledFailureQueue.* \(a stream function may send only to StreamFailureQueue\)/],
      ['an HTTP function sends to a queue', (r) => policyOf(r, 'v2EvidenceHash').push(sendTo('StreamFailureQueue')), /v2EvidenceHash: sqs:SendMessage .* \(a http function may send only to \(none\)\)/],
      ['a public read batch-writes', (r) => policyOf(r, 'v1Stats').push({ Effect: 'Allow', Action: ['dynamodb:BatchWriteItem'], Resource: [{ 'Fn::GetAtt': ['ChainsTable', 'Arn'] }] }), /v1Stats \(public GET \/api\/v1\/stats\) may write chains: dynamodb:BatchWriteItem/],
    ];
    for (const [name, mutate, expected] of cases) {
      const resources = cloneResources();
      mutate(resources);
      const problems = problemsOf(generatedView(resources));
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });
});

describe('generated resources against the CloudFormation spec', () => {
  let db: SpecDatabase;
  before(async () => {
    db = await loadAwsServiceSpec();
  });

  test('tables and roles use known types and properties, and every reference resolves', () => {
    const template: CfnTemplate = { Resources: generatedView().resources };
    // Before osls resolves them, KMS ARNs are `${self:…}` strings; that does not matter to the spec.
    for (const result of [checkResourceTypes(template, db), checkProperties(template, db), checkReferences(template, db), checkTables(template.Resources)]) {
      assert.deepEqual(result.problems, [], result.name);
    }
  });

  test('the table check catches a table whose stream is gone or streams less than infra/tables.json says', () => {
    for (const stream of [undefined, { StreamViewType: 'KEYS_ONLY' }]) {
      const resources = cloneResources();
      if (stream) resources.EvidenceTable!.Properties!.StreamSpecification = stream;
      else delete resources.EvidenceTable!.Properties!.StreamSpecification;
      assert.match(checkTables(resources).problems.join('\n'), /evidence: StreamSpecification is .*, expected \{"StreamViewType":"NEW_AND_OLD_IMAGES"\}/, JSON.stringify(stream));
    }
  });

  test('the property check catches a typo inside a nested structure', () => {
    const resources = cloneResources();
    (resources.CountersTable!.Properties!.TimeToLiveSpecification as JsonObject).Enable = true;
    const problems = checkProperties({ Resources: resources }, db).problems.join('\n');
    assert.match(problems, /CountersTable.TimeToLiveSpecification: unknown property Enable/);
  });
});

describe('function bundles', () => {
  test('no function pulls in lib/local, hardhat or dynalite', async () => {
    // Others may not have written every function yet: bundle the ones that exist.
    const entries = registry.allFunctions().map((f) => path.join(ROOT, f.file)).filter((f) => existsSync(f));
    const result = await build({
      entryPoints: entries,
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      outdir: path.join(ROOT, '.esbuild', 'test'),
      external: ['@aws-sdk/*'],
      plugins: esbuildPlugins,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    assert.deepEqual(inputs.filter((i) => /lib\/local\/|node_modules\/(hardhat|dynalite)\//.test(i)), []);
  });
});

describe('deployment key files (infra/deploy-params.cjs)', () => {
  const { fileContentProblems } = require('../../infra/deploy-params.cjs') as typeof import('../../infra/deploy-params.cjs');
  const fixture = (name: string) => readFileSync(path.join(ROOT, 'test', 'fixtures', 'deploy-keys', name));

  test('the post-quantum TSA certificates must be ML-DSA-65 ones, leaf and root', () => {
    assert.deepEqual(fileContentProblems('mlDsa65CertificateFile', fixture('tsa-pq.pem')), []);
    assert.deepEqual(fileContentProblems('mlDsa65CertificateFile', fixture('tsa-pq-root.pem')), []);
    assert.match(fileContentProblems('mlDsa65CertificateFile', fixture('tsa.pem')).join('\n'), /its key is ec, not ML-DSA-65/);
    assert.match(fileContentProblems('mlDsa65CertificateFile', fixture('ml-dsa-65.pub')).join('\n'), /not a PEM certificate/);
    // The classic kind accepts either: only the post-quantum parameters ask for ML-DSA-65.
    assert.deepEqual(fileContentProblems('certificateFile', fixture('tsa-pq.pem')), []);
  });

  test('a TSA history shipped with the functions is one they can read (absent: nothing retired)', async () => {
    const { retire, tsaCertificateEntry } = await import('../../lib/crypto/tsa/history.js');
    const pem = fixture('tsa.pem').toString('utf8');
    const good = retire({ version: 1, retired: [] }, [{ pem, kind: 'classic', role: 'leaf' }], new Date('2027-01-01T00:00:00Z'));
    const asFile = (h: unknown) => Buffer.from(typeof h === 'string' ? h : JSON.stringify(h));
    assert.deepEqual(fileContentProblems('tsaHistoryFile', asFile(good)), []);
    assert.match(fileContentProblems('tsaHistoryFile', asFile('{"version": 1, "retired": [')).join('\n'), /not JSON/);
    assert.match(fileContentProblems('tsaHistoryFile', asFile({ retired: [] })).join('\n'), /not a TSA history/);
    const entry = tsaCertificateEntry(pem, 'classic', 'root', new Date());
    assert.match(fileContentProblems('tsaHistoryFile', asFile({ version: 1, retired: [{ ...entry, role: 'intermediate' }] })).join('\n'), /retired\[0\] is not a classic or pq root or leaf/);
    assert.match(fileContentProblems('tsaHistoryFile', asFile({ version: 1, retired: [{ ...entry, retired_at: 'soon' }] })).join('\n'), /retired\[0\] has no retired_at time/);
    assert.match(fileContentProblems('tsaHistoryFile', asFile({ version: 1, retired: [{ ...entry, pem: 'not a certificate' }] })).join('\n'), /retired\[0\]\.pem is not a PEM certificate/);
  });
});
