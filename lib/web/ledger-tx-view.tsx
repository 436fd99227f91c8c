/**
 * GET /ledger/tx/{tx_hash}: the local chain's explorer page (the local LEDGER_EXPLORER_TX_URL
 * points here, since a local chain has no public explorer).
 */
import type { Child, FC } from 'hono/jsx';
import { Badge, Page, Time } from './layout.js';
import type { LedgerTxDetails } from './ledger-tx-model.js';

const Row: FC<{ term: string; children?: Child }> = ({ term, children }) => (
  <>
    <dt>{term}</dt>
    <dd>{children}</dd>
  </>
);

export const LedgerTxPage: FC<{ tx: LedgerTxDetails }> = ({ tx }) => {
  const tone = tx.status === 'confirmed' ? 'ok' : tx.status === 'pending' ? 'warn' : 'bad';
  const statusText = tx.status === 'confirmed' ? 'Confirmed' : tx.status === 'pending' ? 'Pending' : 'Reverted';
  const d = tx.decoded;
  return (
    <Page title={`Transaction ${tx.tx_hash.slice(0, 12)}… — Ledger`} description={`Ledger transaction ${tx.tx_hash} on chain ${tx.chain_id}`}>
      <section class={`verdict ${tone}`} aria-labelledby="tx-heading">
        <h1 id="tx-heading">Ledger transaction</h1>
        <p>
          <code class="mono" id="tx-hash">
            {tx.tx_hash}
          </code>
        </p>
        <p>
          <Badge tone={tone}>{statusText}</Badge>{' '}
          {tx.status === 'pending' ? 'not in a block yet' : `${tx.confirmations} confirmation${tx.confirmations === 1 ? '' : 's'}`}
        </p>
      </section>

      <section aria-labelledby="details-heading">
        <h2 id="details-heading">Details</h2>
        <dl class="facts">
          <Row term="Chain id">{String(tx.chain_id)}</Row>
          <Row term="Block">{tx.block_number === null ? 'pending' : `#${tx.block_number}`}</Row>
          <Row term="Block time">
            <Time iso={tx.block_time} />
          </Row>
          <Row term="Confirmations">
            {String(tx.confirmations)} as of <Time iso={tx.checked_at} />
          </Row>
          <Row term="From">
            <code class="mono">{tx.from}</code>
          </Row>
          <Row term="To">{tx.to ? <code class="mono">{tx.to}</code> : 'contract creation'}</Row>
          <Row term="Nonce">{String(tx.nonce)}</Row>
          <Row term="Value">{`${tx.value_wei} wei`}</Row>
          <Row term="Gas used">{tx.gas_used ?? 'not yet'}</Row>
          <Row term="Status">{statusText}</Row>
        </dl>
      </section>

      <section aria-labelledby="input-heading">
        <h2 id="input-heading">Input data</h2>
        {d.kind === 'anchor' ? (
          <>
            <p>An evidence anchor: the file’s SHA-256 followed by the service’s server_hash (64 bytes).</p>
            <dl class="facts">
              <Row term="image_hash">
                <code class="mono" id="decoded-image-hash">
                  {d.image_hash}
                </code>
              </Row>
              <Row term="server_hash">
                <code class="mono" id="decoded-server-hash">
                  {d.server_hash}
                </code>
              </Row>
            </dl>
            <p>
              <a href={`../../verify/${d.image_hash}`} id="verify-link">
                Verify this evidence
              </a>
            </p>
          </>
        ) : d.kind === 'pq-key' ? (
          <>
            <p>A post-quantum key registration: ASCII “ML-DSA-65:” followed by the SHA-256 fingerprint of the service’s public key.</p>
            <dl class="facts">
              <Row term="Algorithm">{d.algorithm}</Row>
              <Row term="Key fingerprint">
                <code class="mono">{d.fingerprint}</code>
              </Row>
            </dl>
          </>
        ) : d.kind === 'batch' ? (
          <>
            <p>
              A batch of anchors: ASCII “MERKLE-SHA256:” followed by the RFC 6962 Merkle root of their leaves, SHA-256(0x00 ‖ image_hash ‖ server_hash). Each
              anchor’s receipt carries its leaf index and inclusion path to this root.
            </p>
            <dl class="facts">
              <Row term="Merkle root">
                <code class="mono">{d.merkle_root}</code>
              </Row>
            </dl>
          </>
        ) : (
          <p>{d.bytes === 0 ? 'No input data.' : `${d.bytes} bytes that are not a record of this service.`}</p>
        )}
        <details>
          <summary>Raw input</summary>
          <pre>
            <code>{tx.input}</code>
          </pre>
        </details>
      </section>
    </Page>
  );
};
