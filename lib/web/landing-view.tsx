/** `/`: what the service does, the tiers, and the ways in (check a file or a hash, the API reference). */
import type { FC } from 'hono/jsx';
import type { Feature, TierName, TierTable } from '../accounts/tiers.js';
import { FEATURE_MIN_TIER, tierLabel } from '../accounts/tiers.js';
import { CheckFileBox, Page } from './layout.js';

const FEATURE_LABEL: Record<Feature, string> = {
  hash: 'registering hashes',
  verify: 'public verification',
  timestamp: 'RFC 3161 timestamps',
  ed25519_signing: 'Ed25519 signatures',
  pdf_certificate: 'signed PDF certificates',
  anchor: 'full anchoring (ML-DSA-65, timestamp, ledger)',
  full: 'the full evidence pipeline',
};

const number = (n: number) => n.toLocaleString('en-US');

export const LandingPage: FC<{ tiers: TierTable }> = ({ tiers }) => {
  const names = Object.keys(tiers) as TierName[];
  const features = (Object.keys(FEATURE_MIN_TIER) as Feature[]).filter((f) => f !== 'full');
  // What each tier adds to the one below (tiers include everything below them).
  const includes = (t: TierName) => {
    const added = features.filter((f) => FEATURE_MIN_TIER[f] === t).map((f) => FEATURE_LABEL[f]);
    const below = names[names.indexOf(t) - 1];
    if (!below) return added.join(', ').replace(/^./, (c) => c.toUpperCase());
    return added.length ? `Everything in ${tierLabel(below)}, and ${added.join(', ')}` : `Everything in ${tierLabel(below)}, with higher limits`;
  };
  return (
    <Page
      title="Evidence anchoring service — proof of when a photo existed, checkable without us"
      description="Anchor the SHA-256 of a photo with a post-quantum signature, an RFC 3161 timestamp and a public-ledger transaction. Only the hash is sent; anyone can verify."
      script
    >
      <h1>Proof that a photo existed, and was not changed since</h1>
      <p>
        Your app computes the SHA-256 of each photo on the device and sends only that hash. The photo never leaves the device. For each hash the
        service produces three independent proofs that anyone can check <strong>without trusting us</strong>:
      </p>
      <ul>
        <li>
          a <strong>post-quantum signature</strong> (ML-DSA-65, FIPS 204) over a statement of the hash, the device and the time;
        </li>
        <li>
          an <strong>RFC 3161 timestamp</strong> whose imprint is the photo's hash: <code>openssl ts -verify -data photo.jpg</code> checks it;
        </li>
        <li>
          a <strong>transaction on a public proof-of-stake chain</strong> carrying the hash, readable on any node of that chain.
        </li>
      </ul>
      <p>
        Each device signs its hashes with its own key and links them into a hash chain, so a gap or a change in the sequence shows. Insurers,
        lawyers and courts can check everything with OpenSSL, any Ethereum node and any ML-DSA implementation, or on this site.
      </p>

      <p class="cta">
        <a href="/dashboard">Create an account or log in</a>: your API keys, your usage, and files time-stamped, signed or anchored from the
        browser (the file stays on your device).
      </p>

      <CheckFileBox verifyBase="/verify/" />
      <section aria-labelledby="check-hash-heading">
        <h2 id="check-hash-heading">Or check a hash</h2>
        <form id="check-hash" class="check" data-verify-base="/verify/" method="get" action="#">
          <p>Paste the SHA-256 of the file (64 hexadecimal characters, as <code>sha256sum photo.jpg</code> prints it).</p>
          <label for="check-hash-input">SHA-256 hash</label>
          <input id="check-hash-input" name="hash" type="text" inputmode="text" autocomplete="off" spellcheck={false} aria-describedby="check-hash-status" placeholder="64 hexadecimal characters" />
          <button type="submit">Check hash</button>
          <p id="check-hash-status" class="status" role="status" aria-live="polite"></p>
        </form>
      </section>

      <section aria-labelledby="tiers-heading">
        <h2 id="tiers-heading">Tiers</h2>
        <p>
          Every account can register and verify hashes; higher tiers add the proofs. Limits count per account, all its API keys together: the
          monthly quota counts successful evidence operations, the rate every request.
        </p>
        <div class="table-scroll" tabindex={0} role="region" aria-labelledby="tiers-heading">
          <table class="tiers">
            <thead>
              <tr>
                <th scope="col">Tier</th>
                <th scope="col">Evidence operations a month</th>
                <th scope="col">Requests a minute</th>
                <th scope="col">Includes</th>
              </tr>
            </thead>
            <tbody>
              {names.map((t) => (
                <tr>
                  <th scope="row">{tierLabel(t)}</th>
                  <td>{number(tiers[t].monthly_quota)}</td>
                  <td>{number(tiers[t].rate_per_minute)}</td>
                  <td>{includes(t)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>

      <section aria-labelledby="build-heading">
        <h2 id="build-heading">Build with it</h2>
        <p>
          Register an account on the <a href="/dashboard">dashboard</a> or with <code>POST /api/v2/account/register</code> (you get an API key,
          shown once), then send hashes with it. The{' '}
          <a href="/docs">API reference</a> describes every operation; the machine-readable contract is <a href="/api/openapi.json">/api/openapi.json</a>.
          The keys that sign are published at <a href="/.well-known/evidence-trust-anchors.json">/.well-known/evidence-trust-anchors.json</a>.
        </p>
      </section>
    </Page>
  );
};
