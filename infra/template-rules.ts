/**
 * Offline rules for the CloudFormation template that `osls package` writes, shared by
 * infra/check-template.ts (the packaged template) and test/infra/template.test.ts (the generator
 * output, without osls). Each rule returns a list of problems; an empty list means it holds.
 *
 * The rules live in infra/template-rules/, one module per family; this module exports them all.
 *
 * Two families:
 *  - spec rules, against the CloudFormation resource specification in @aws-cdk/aws-service-spec:
 *    known resource types, known properties, required properties, Ref/GetAtt/Sub/DependsOn targets;
 *  - deployment rules, against infra/functions.json and infra/tables.json (via infra/registry.cjs):
 *    one role per function, no wildcards, DynamoDB and KMS grants exactly as the registry says,
 *    public reads write nothing, every route and schedule, every stream consumer's event source
 *    mapping, every table's settings, the edge.
 */
export * from './template-rules/common.js';
export * from './template-rules/spec.js';
export * from './template-rules/least-privilege.js';
export * from './template-rules/packaged.js';
export * from './template-rules/edge.js';
