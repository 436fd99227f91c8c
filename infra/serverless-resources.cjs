'use strict';
/**
 * serverless.yml `resources:` generated from infra/tables.json and infra/functions.json
 * (`${file(./infra/serverless-resources.cjs)}`):
 *  - one DynamoDB table per definition: on demand, point-in-time recovery, TTL where the
 *    definition names an expiry attribute, encrypted with KMS, retained on delete and replace;
 *  - one IAM role per function granting exactly its access map (tables and their index ARNs),
 *    its own log group, and the KMS keys it needs — nothing with `*` as action or resource.
 * KMS key ARNs come from serverless.yml `custom.kms`; on any stage but `dev` a placeholder ARN
 * (account 000000000000) stops packaging, so a real deploy cannot ship a policy on a fake key.
 */

const registry = require('./registry.cjs');

const PLACEHOLDER_ACCOUNT = ':000000000000:';
const PLACEHOLDER_STAGES = new Set(['dev']);

/** One CloudFormation table from one infra/tables.json definition. */
function buildTable(key, def) {
  const properties = {
    TableName: { 'Fn::Sub': `\${AWS::StackName}-${key}` },
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: def.AttributeDefinitions,
    KeySchema: def.KeySchema,
    PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
    DeletionProtectionEnabled: true,
    Tags: [{ Key: 'table', Value: key }],
  };
  if (def.GlobalSecondaryIndexes) properties.GlobalSecondaryIndexes = def.GlobalSecondaryIndexes;
  if (def.TimeToLiveAttribute) properties.TimeToLiveSpecification = { AttributeName: def.TimeToLiveAttribute, Enabled: true };
  return {
    Type: 'AWS::DynamoDB::Table',
    // Evidence must outlive the stack: neither `osls remove` nor a replacing update deletes data.
    DeletionPolicy: 'Retain',
    UpdateReplacePolicy: 'Retain',
    Properties: properties,
  };
}

/** The IAM statements of one function: logs, then one per table (and its indexes), then one per KMS key. */
function buildStatements(fn) {
  const grants = registry.expectedGrants(fn);
  const statements = [
    {
      Sid: 'OwnLogGroup',
      Effect: 'Allow',
      Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      // The log group's Arn attribute ends in `:*`, which covers its log streams and nothing else.
      Resource: [{ 'Fn::GetAtt': [registry.naming.logGroup(fn.name), 'Arn'] }],
    },
  ];
  for (const [table, grant] of Object.entries(grants.dynamo)) {
    const logicalId = registry.naming.table(table);
    statements.push({
      Sid: `Table${logicalId}`,
      Effect: 'Allow',
      Action: grant.table,
      Resource: [{ 'Fn::GetAtt': [logicalId, 'Arn'] }],
    });
    if (grant.index.length > 0) {
      statements.push({
        Sid: `Indexes${logicalId}`,
        Effect: 'Allow',
        Action: grant.index,
        Resource: grant.indexes.map((name) => ({ 'Fn::Sub': `\${${logicalId}.Arn}/index/${name}` })),
      });
    }
  }
  for (const [key, actions] of Object.entries(grants.kms)) {
    statements.push({
      Sid: `Kms${key.charAt(0).toUpperCase()}${key.slice(1)}`,
      Effect: 'Allow',
      Action: actions,
      Resource: [`\${self:custom.kms.${registry.KMS_KEYS[key].custom}}`],
    });
  }
  return statements;
}

/** One role per function, assumable by Lambda only, with an inline least-privilege policy. */
function buildRole(fn) {
  return {
    Type: 'AWS::IAM::Role',
    Properties: {
      Description: `Least-privilege role of the ${fn.name} function (generated from infra/functions.json)`,
      AssumeRolePolicyDocument: {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Principal: { Service: ['lambda.amazonaws.com'] }, Action: ['sts:AssumeRole'] }],
      },
      Policies: [{ PolicyName: `${fn.name}-least-privilege`, PolicyDocument: { Version: '2012-10-17', Statement: buildStatements(fn) } }],
    },
  };
}

/** `{ Resources, Outputs }` for serverless.yml. */
function buildResources() {
  registry.assertValidRegistry();
  const Resources = {};
  const Outputs = {};
  for (const [key, def] of Object.entries(registry.TABLES)) {
    const logicalId = registry.naming.table(key);
    Resources[logicalId] = buildTable(key, def);
    Outputs[`${logicalId}Name`] = { Description: `${def.envVar}`, Value: { Ref: logicalId } };
  }
  for (const fn of registry.allFunctions()) Resources[registry.naming.role(fn.name)] = buildRole(fn);
  return { Resources, Outputs };
}

/** Refuses placeholder KMS key ARNs outside the `dev` stage (osls passes resolveVariable). */
async function assertRealKeys(resolveVariable) {
  const stage = await resolveVariable('sls:stage');
  if (PLACEHOLDER_STAGES.has(stage)) return;
  const bad = [];
  for (const { custom } of Object.values(registry.KMS_KEYS)) {
    const arn = await resolveVariable(`self:custom.kms.${custom}`);
    if (typeof arn !== 'string' || !arn.startsWith('arn:') || arn.includes(PLACEHOLDER_ACCOUNT)) bad.push(`custom.kms.${custom} = ${arn}`);
  }
  if (bad.length > 0) {
    throw new Error(`stage "${stage}" needs real KMS key ARNs (pass --param=...; see serverless.yml custom.kms):\n  ${bad.join('\n  ')}`);
  }
}

module.exports = async ({ resolveVariable } = {}) => {
  if (resolveVariable) await assertRealKeys(resolveVariable);
  return buildResources();
};
module.exports.buildResources = buildResources;
module.exports.buildStatements = buildStatements;
