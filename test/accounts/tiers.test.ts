import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertFeature, featuresOf, tierAllows } from '../../lib/accounts/tiers.js';
import { DomainError } from '../../lib/errors.js';
import { createApp } from '../../lib/http/app.js';

describe('tier feature gates', () => {
  it('offer hash and verify on every tier', () => {
    for (const tier of ['free', 'starter', 'pro', 'enterprise'] as const) {
      assert.equal(tierAllows(tier, 'hash'), true);
      assert.equal(tierAllows(tier, 'verify'), true);
    }
  });

  it('offer timestamp, Ed25519 signing and PDF certificates from Starter', () => {
    assert.deepEqual(featuresOf('free'), ['hash', 'verify']);
    assert.equal(tierAllows('starter', 'pdf_certificate'), true);
    assert.equal(tierAllows('free', 'pdf_certificate'), false);
  });

  it('list the features of a tier, each of which has its endpoint', () => {
    assert.deepEqual(featuresOf('starter'), ['hash', 'verify', 'timestamp', 'ed25519_signing', 'pdf_certificate']);
  });

  it('offer anchor and full from Pro, and everything on Enterprise', () => {
    assert.equal(tierAllows('starter', 'anchor'), false);
    assert.equal(tierAllows('pro', 'anchor'), true);
    assert.equal(tierAllows('pro', 'full'), true);
    assert.deepEqual(featuresOf('enterprise'), ['hash', 'verify', 'timestamp', 'ed25519_signing', 'pdf_certificate', 'anchor', 'full']);
  });

  it('answer 403 tier_insufficient naming the tier needed', async () => {
    // The domain says "forbidden"; the API's one error handler (lib/http/app.ts) makes it the 403.
    assert.throws(
      () => assertFeature('starter', 'full'),
      (e: unknown) =>
        e instanceof DomainError &&
        e.kind === 'forbidden' &&
        e.code === 'tier_insufficient' &&
        e.extensions.required_tier === 'pro' &&
        /Pro tier/.test(e.detail),
    );
    const app = createApp();
    app.get('/gate', () => {
      assertFeature('starter', 'full');
      throw new Error('unreachable');
    });
    const res = await app.request('/gate');
    const problem = (await res.json()) as { status: number; code: string; required_tier: string; detail: string };
    assert.equal(res.status, 403);
    assert.equal(problem.status, 403);
    assert.equal(problem.code, 'tier_insufficient');
    assert.equal(problem.required_tier, 'pro');
    assert.match(problem.detail, /Pro tier/);
  });
});
