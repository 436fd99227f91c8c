/**
 * `evidence c2pa sign`: Content Credentials with our time. The official builder embeds a C2PA
 * manifest (claim v2, a `c2pa.created` action) into the JPEG; the claim is signed here with the
 * user's certificate and key (ES256), and the signature is time-stamped by the service's RFC 3161
 * TSA (`POST /api/v2/tsa`, charged as any time-stamp) as C2PA's v2 time-stamp (`sigTst2`). A reader
 * that trusts our TSA root then trusts the signature even after the certificate expires
 * (docs/c2pa.md).
 *
 * Only the signature's 32-byte digest goes to the service, never the photo or the key. The
 * certificate is checked against C2PA's profile, and the key against the certificate, before
 * anything is sent.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { claimSignerProblems } from '../crypto/c2pa/certificate-profile.js';
import { claimSigner, keyFitsCertificate } from '../crypto/c2pa/claim-signer.js';
import { parseCertificate } from '../crypto/tsa/certificates.js';
import { TsaUnavailableError } from '../crypto/tsa/errors.js';
import { derToPem, pemBlocks } from '../crypto/tsa/pem.js';
import { RemoteTsa } from '../crypto/tsa/remote.js';
import { extractTimestampToken } from '../crypto/tsa/verify.js';
import { signJpeg } from './c2pa-sdk.js';
import { CliError, requestJson, writeFileAtomically } from './client.js';

export interface C2paSignOptions {
  photo: string;
  out: string;
  signerCert: string;
  signerKey: string;
  /** Base URL of the service, without a trailing slash. */
  url: string;
  apiKey: string;
  progress: (line: string) => void;
  /** The moment the certificate must be valid at (default: now). */
  now?: Date;
}

export interface C2paSignResult {
  out: string;
  signer: string;
  /** genTime of our token. */
  genTime: Date;
  /** The COSE_Sign1's length, and the bytes the builder reserved for it (always equal). */
  coseLength: number;
  reserveSize: number;
}

export async function c2paSign(options: C2paSignOptions): Promise<C2paSignResult> {
  const { progress } = options;
  // 1. The certificate and the key, checked before anything is read from or sent to the service.
  const chainText = await readText(options.signerCert, 'signing certificate chain');
  const chainDer = pemBlocks(chainText, 'CERTIFICATE').map((b) => b.der);
  const leafDer = chainDer[0];
  if (!leafDer) throw new CliError(`${options.signerCert} holds no PEM certificate (-----BEGIN CERTIFICATE-----).`);
  let leaf;
  try {
    leaf = parseCertificate(leafDer);
  } catch {
    throw new CliError(`The first certificate in ${options.signerCert} is not an X.509 certificate.`);
  }
  const problems = claimSignerProblems(leaf, options.now ?? new Date());
  if (problems.length > 0) {
    throw new CliError(
      `${options.signerCert} cannot sign Content Credentials: C2PA readers would refuse it (C2PA 2.1 §14.5.1, the certificate profile): ${problems.join('; ')}. Nothing was sent.`,
    );
  }
  const privateKey = await readKey(options.signerKey, progress);
  if (!keyFitsCertificate(privateKey, leafDer)) throw new CliError(`${options.signerKey} is not the key of the certificate in ${options.signerCert}. Nothing was sent.`);
  const jpeg = new Uint8Array(await readFile(options.photo).catch(() => {
    throw new CliError(`Cannot read ${options.photo}.`);
  }));
  if (!(jpeg[0] === 0xff && jpeg[1] === 0xd8 && jpeg[2] === 0xff)) throw new CliError(`${options.photo} is not a JPEG: this release embeds Content Credentials in JPEG photos only.`);

  // 2. The service's TSA, as any RFC 3161 client reaches it: the API key as the password of HTTP
  //    Basic in the URL, the reply checked (imprint, nonce, signature, chain) against the service's TSA root.
  const tsa = await serviceTsa(options.url, options.apiKey);
  let genTime: Date | undefined;
  let coseLength = 0;
  const signer = claimSigner({
    chainDer,
    privateKey,
    timestamp: async (imprint) => {
      progress(`Time-stamping the signature at ${options.url}/api/v2/tsa (only its SHA-256 is sent)…`);
      try {
        const issued = await tsa.timestamp(imprint);
        genTime = issued.genTime;
        return extractTimestampToken(issued.response);
      } catch (error) {
        if (error instanceof TsaUnavailableError) throw new CliError(explainTsaError(error));
        throw error;
      }
    },
    onSignature: (cose) => (coseLength = cose.length),
  });

  // 3. The official builder embeds the manifest; our signer signs its claim.
  progress(`Signing ${path.basename(options.photo)} as ${subjectOf(leaf)} (ES256, C2PA claim v2)…`);
  const signed = await signJpeg(jpeg, signer, { title: path.basename(options.out), generator: { name: 'evidence', version: '1' } });
  if (!genTime) throw new CliError('The builder did not ask for a signature.');
  await writeFileAtomically(options.out, signed);
  return { out: options.out, signer: subjectOf(leaf), genTime, coseLength, reserveSize: signer.reserveSize };
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    throw new CliError(`Cannot read the ${what} ${file}.`);
  }
}

/** The private key (PEM: PKCS#8 or SEC 1). A key file others can read is named, not refused (as ssh does for its config, not its keys: it is the user's file). */
async function readKey(file: string, progress: (line: string) => void): Promise<KeyObject> {
  const text = await readText(file, 'signing key');
  const mode = await stat(file).then((s) => s.mode & 0o777, () => 0);
  if (mode & 0o077) progress(`Warning: ${file} can be read by other users (mode ${mode.toString(8)}); a signing key belongs in a file of mode 600 (chmod 600 ${file}).`);
  try {
    return createPrivateKey(text);
  } catch {
    // The message of createPrivateKey is not shown: it could quote the file.
    throw new CliError(`${file} is not a PEM private key (PKCS#8 "BEGIN PRIVATE KEY" or "BEGIN EC PRIVATE KEY").`);
  }
}

/** A RemoteTsa on the service's `/api/v2/tsa`, trusting the TSA root the service publishes (`GET /api/v2/tsa/certificates`). */
async function serviceTsa(url: string, apiKey: string): Promise<RemoteTsa> {
  const chain = await requestJson(`${url}/api/v2/tsa/certificates`, { headers: { accept: 'application/pem-certificate-chain' } });
  const root = typeof chain.body === 'string' ? pemBlocks(chain.body, 'CERTIFICATE').at(-1) : undefined;
  if (chain.status !== 200 || !root) throw new CliError(`${url}/api/v2/tsa/certificates answered ${chain.status} without the TSA's certificates: is --url the service?`);
  const tsaUrl = new URL(`${url}/api/v2/tsa`);
  tsaUrl.username = 'evidence';
  tsaUrl.password = encodeURIComponent(apiKey);
  return new RemoteTsa({ url: tsaUrl.toString(), rootsPem: [derToPem(root.der)], timeoutMs: 30_000 });
}

function explainTsaError(error: TsaUnavailableError): string {
  switch (error.httpStatus) {
    case 401:
      return 'The API key was refused (401). Check EVIDENCE_API_KEY: it must be an active key of your account.';
    case 403:
      return 'Your tier does not include time-stamps (403): they need Starter or above.';
    case 429:
      return 'The rate limit or the monthly quota was hit (429): wait, then run the command again.';
    default:
      return `The service could not time-stamp the signature: ${error.message}. Nothing was written.`;
  }
}

function subjectOf(cert: ReturnType<typeof parseCertificate>): string {
  const cn = cert.subject.typesAndValues.find((t) => t.type === '2.5.4.3');
  return cn ? String(cn.value.valueBlock.value) : 'the certificate\'s subject';
}
