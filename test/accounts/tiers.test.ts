import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertFeature, featuresOf, tierAllows } from '../../lib/accounts/tiers.js';
import { HttpError } from '../../lib/http/errors.js';

describe('tier feature gates', () => {
  it('offer hash and verify on every tier', () => {
    for (const tier of ['free', 'starter', 'pro', 'enterprise'] as const) {
      assert.equal(tierAllows(tier, 'hash'), true);
      assert.equal(tierAllows(tier, 'verify'), true);
    }
  });

  it('offer timestamp, Ed25519 signing and PDF certificates from Starter', () => {
    assert.deepEqual(featuresOf('free'), ['hash', 'verify']);
    assert.deepEqual(featuresOf('starter'), ['hash', 'verify', 'timestamp', 'ed25519_signing', 'pdf_certificate']);
  });

  it('offer anchor and full from Pro, and everything on Enterprise', () => {
    assert.equal(tierAllows('starter', 'anchor'), false);
    assert.equal(tierAllows('pro', 'anchor'), true);
    assert.equal(tierAllows('pro', 'full'), true);
    assert.equal(featuresOf('enterprise').length, 7);
  });

  it('answer 403 tier_insufficient naming the tier needed', () => {
    assert.throws(
      () => assertFeature('starter', 'full'),
      (e: unknown) =>
        e instanceof HttpError &&
        e.status === 403 &&
        e.code === 'tier_insufficient' &&
        e.extensions.required_tier === 'pro' &&
        /Pro tier/.test(e.detail),
    );
  });
});
