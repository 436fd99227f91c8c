/**
 * GET /verify/{image_hash}: the verdict first (readable without JavaScript), then one card per
 * proof, the check-a-file box and how to verify without this service.
 */
import type { Child, FC } from 'hono/jsx';
import { Badge, CheckFileBox, Page, Time } from './layout.js';
import type { AnchoredModel, Tone, VerifyPageModel } from './verify-model.js';

/** Links of the page, relative to /verify/{hash} so that they work behind any base path. */
const receiptHref = (hash: string) => `../api/v2/evidence/receipt/${hash}`;
const apiHref = (hash: string) => `../api/v2/evidence/verify/${hash}`;

/** data-status, data-failed and data-open carry the one verdict for machines (its status, the proofs that fail, the ones not established). */
const Verdict: FC<{ tone: Tone; title: string; status?: string; failed?: string[]; open?: string[]; children?: Child }> = ({ tone, title, status, failed, open, children }) => (
  <section class={`verdict ${tone}`} aria-labelledby="verdict" data-status={status} data-failed={failed?.join(' ')} data-open={open?.join(' ')}>
    <h1 id="verdict">
      <span aria-hidden="true">{tone === 'ok' ? '✓ ' : tone === 'bad' ? '✗ ' : '! '}</span>
      {title}
    </h1>
    {children}
  </section>
);

const Proof: FC<{ id: string; title: string; tone: Tone; status: string; children?: Child }> = ({ id, title, tone, status, children }) => (
  <li class="proof" id={id} aria-labelledby={`${id}-title`}>
    <h3 id={`${id}-title`}>
      <span>{title}</span>
      <Badge tone={tone}>{status}</Badge>
    </h3>
    <dl class="facts">{children}</dl>
  </li>
);

const Fact: FC<{ term: string; children?: Child }> = ({ term, children }) => (
  <>
    <dt>{term}</dt>
    <dd>{children}</dd>
  </>
);

const HashLine: FC<{ hash: string }> = ({ hash }) => (
  <p>
    SHA-256 <code class="mono" id="image-hash">{hash}</code>
  </p>
);

/** The verdict's reasons for a card, as its last fact. */
const Why: FC<{ reasons: string[] }> = ({ reasons }) => (
  <Fact term="Checked">
    {reasons.map((r, i) => (
      <>
        {i > 0 ? <br /> : null}
        {r}
      </>
    ))}
  </Fact>
);

const AnchoredPage: FC<{ m: AnchoredModel }> = ({ m }) => (
  <>
    <Verdict tone={m.verdict.tone} title={m.verdict.title} status={m.status} failed={m.failed} open={m.open}>
      <p>{m.verdict.summary}</p>
      <HashLine hash={m.imageHash} />
      <p>
        Anchored <Time iso={m.anchoredAt} />.
      </p>
    </Verdict>

    <section aria-labelledby="proofs-heading">
      <h2 id="proofs-heading">Proofs</h2>
      <ul class="proofs">
        <Proof id="proof-pq" title="Post-quantum signature" tone={m.pq.tone} status={m.pq.status}>
          <Fact term="Algorithm">ML-DSA-65 (NIST FIPS 204)</Fact>
          <Fact term="Signed">
            <code class="mono">server_hash</code> = SHA-256 of the RFC 8785 statement: <code class="mono">{m.serverHash}</code>
          </Fact>
          <Fact term="Key">
            <code class="mono">{m.pq.keyId}</code> {m.pq.keyPublished ? '(this service’s published key)' : '(not a key this service publishes)'}
          </Fact>
          <Why reasons={m.pq.reasons} />
        </Proof>

        <Proof id="proof-timestamp" title="Timestamp" tone={m.timestamp.tone} status={m.timestamp.status}>
          <Fact term="Time">
            <Time iso={m.timestamp.time} />
          </Fact>
          <Fact term="Authority">{m.timestamp.tsa ?? 'unknown'}</Fact>
          <Fact term="Serial">
            <code class="mono">{m.timestamp.serial}</code>
          </Fact>
          <Fact term="Stamped">the file’s SHA-256 itself, so OpenSSL can check it against the file</Fact>
          <Why reasons={m.timestamp.reasons} />
        </Proof>

        <Proof id="proof-ledger" title="Ledger transaction" tone={m.ledger.tone} status={m.ledger.status}>
          <Fact term="Transaction">
            <a href={m.ledger.explorerUrl} id="explorer-link" class="mono">
              {m.ledger.tx_hash}
            </a>
          </Fact>
          <Fact term="Block">{m.ledger.block_number === null ? 'not yet mined' : `#${m.ledger.block_number}`}</Fact>
          <Fact term="Confirmations">
            {String(m.ledger.confirmations)}
            {m.ledger.checked_at ? <> as of <Time iso={m.ledger.checked_at} /></> : null}
          </Fact>
          <Fact term="Final">{m.ledger.final ? <>yes, since <Time iso={m.ledger.final_since} /></> : 'not yet'}</Fact>
          <Fact term="Chain id">{String(m.ledger.chainId)}</Fact>
          <Fact term="Input data">{m.ledger.inputData}</Fact>
          <Why reasons={m.ledger.reasons} />
        </Proof>

        <Proof id="proof-device" title="Device" tone={m.device.tone} status={m.device.status}>
          <Fact term="Device key">
            <code class="mono">{m.device.publicKeyHex}</code>
            {m.device.deviceId ? ` (${m.device.deviceId})` : ''}
          </Fact>
          <Fact term="Chain position">
            {m.device.chainIndex === 0 ? 'link 0 (the first of this device’s chain)' : `link ${m.device.chainIndex} of this device’s chain`}
          </Fact>
          <Fact term="Chain hash">
            <code class="mono">{m.device.chainHash}</code>
          </Fact>
          <Fact term="Previous">{m.device.previousHash ? <code class="mono">{m.device.previousHash}</code> : 'none (first link)'}</Fact>
          <Why reasons={m.device.reasons} />
        </Proof>
      </ul>
    </section>

      <CheckFileBox verifyBase="./" />

      <section aria-labelledby="yourself-heading">
        <h2 id="yourself-heading">Verify it without this service</h2>
        <p>
          <a href={receiptHref(m.imageHash)} id="receipt-link" download={`receipt-${m.imageHash}.json`}>
            Download the receipt
          </a>{' '}
          (JSON: every signature, the timestamp token, the TSA certificates and the ledger reference), then run:
        </p>
        <pre>
          <code>evidence verify photo.jpg --receipt receipt.json --root tsa-root.pem --rpc https://your-node</code>
        </pre>
        <p>
          Or check the timestamp with OpenSSL alone: <code>openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem</code>. The same
          result as JSON: <a href={apiHref(m.imageHash)}>verification API</a>.
        </p>
      </section>
    </>
);

/** The page for a verification model. */
export const VerifyPage: FC<{ model: VerifyPageModel }> = ({ model }) => {
  if (model.kind === 'anchored') {
    return (
      <Page title={`${model.verdict.title}: ${model.imageHash.slice(0, 12)}… — Evidence verification`} description={model.verdict.summary} script>
        <AnchoredPage m={model} />
      </Page>
    );
  }
  if (model.kind === 'registered') {
    return (
      <Page title="Not anchored — Evidence verification" script>
        <Verdict tone="warn" title="Not anchored">
          <p>
            This hash was registered with the service{model.registeredAt ? <> (first by any account: <Time iso={model.registeredAt} />)</> : null}, but
            nothing is anchored for it: there is no post-quantum signature, no timestamp and no ledger transaction. A registration is the note of
            the account that made it, not a proof.
          </p>
          <HashLine hash={model.imageHash} />
        </Verdict>
        <CheckFileBox verifyBase="./" />
      </Page>
    );
  }
  return <NotAnchoredPage hash={model.imageHash} />;
};

/** 404: nothing is anchored for this hash. */
export const NotAnchoredPage: FC<{ hash: string }> = ({ hash }) => (
  <Page title="Nothing anchored — Evidence verification" script>
    <Verdict tone="bad" title="Nothing is anchored for this hash">
      <p>
        This service has no evidence for this SHA-256 hash: no signature, no timestamp, no ledger transaction. If you checked a file, it is not
        the file that was anchored — even a one-byte change gives another hash.
      </p>
      <HashLine hash={hash} />
    </Verdict>
    <CheckFileBox verifyBase="./" />
  </Page>
);

/** 400: the path does not hold a SHA-256 hash. */
export const BadHashPage: FC<{ given: string }> = ({ given }) => (
  <Page title="Not a SHA-256 hash — Evidence verification" script>
    <Verdict tone="bad" title="That is not a SHA-256 hash">
      <p>
        A verification link ends with the file’s SHA-256 hash: 64 hexadecimal characters (0-9, a-f). This one ends with{' '}
        <code class="mono">{given.length > 200 ? `${given.slice(0, 200)}…` : given}</code>.
      </p>
    </Verdict>
    <CheckFileBox verifyBase="./" />
  </Page>
);

/** Any other error (429, 503, 500) as a page. */
export const ErrorPage: FC<{ title: string; detail: string }> = ({ title, detail }) => (
  <Page title={`${title} — Evidence verification`}>
    <Verdict tone="warn" title={title}>
      <p>{detail}</p>
    </Verdict>
  </Page>
);
