/**
 * `npm run edge-waf` (infra/edge-waf-template.ts): the edge WebACL's template for a stage and a rate,
 * written without packaging the service (a prod package needs the WebACL's ARN first). It writes
 * a template that passes the CloudFormation specification and the edge rule, with the rate asked
 * for, and refuses a rate WAF cannot take without writing anything.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import { main } from '../../infra/edge-waf-template.js';
import { type CfnTemplate, checkEdgeWebAcl, checkProperties, checkResourceTypes } from '../../infra/template-rules.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'edge-waf-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('npm run edge-waf', () => {
  test('writes the WebACL template for the stage and rate asked for, valid against the specification', async () => {
    const rate = 300 + Math.floor(Math.random() * 1000);
    const out = path.join(dir, 'waf.json');
    assert.equal(await main(['--stage', 'prod', '--rate', String(rate), '--out', out]), 0);
    const waf = JSON.parse(readFileSync(out, 'utf8')) as CfnTemplate;
    const acl = waf.Resources.EdgeWebAcl!.Properties!;
    assert.equal(acl.Name, 'evidence-anchoring-prod-edge');
    assert.deepEqual(checkEdgeWebAcl(waf, rate), []);
    assert.ok(checkEdgeWebAcl(waf, rate + 1).some((p) => p.includes(`limit ${rate}`)));
    const db = await loadAwsServiceSpec();
    assert.deepEqual([...checkResourceTypes(waf, db).problems, ...checkProperties(waf, db).problems], []);
  });

  test('refuses a rate WAF cannot take, writing nothing', async () => {
    const out = path.join(dir, 'refused.json');
    assert.equal(await main(['--rate', '5', '--out', out]), 1);
    assert.equal(existsSync(out), false);
  });
});
