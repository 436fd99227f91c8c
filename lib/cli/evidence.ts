/**
 * `evidence`: the command-line client (bin/evidence.mjs runs it).
 *
 *     evidence keygen [--out device-key.json]
 *     evidence anchor photo.jpg [--url http://127.0.0.1:3000] [--key device-key.json]
 *     evidence sync photos/ [--url http://127.0.0.1:3000] [--key device-key.json]
 *     evidence verify <photo.jpg|hash> [--receipt photo.jpg.receipt.json | --certificate cert.pdf] [--rpc URL] [--root tsa-root.pem]
 *                     [--wallet 0x…] [--timestamp t.json] [--signature s.json] [--jwks jwks.json] [--evidence-record photo.ers]
 *     evidence trust add|list|remove [<base-url>]
 *     evidence c2pa sign photo.jpg --out signed.jpg --signer-cert chain.pem --signer-key key.pem [--url http://127.0.0.1:3000]
 *
 * keygen and anchor use only the public REST API; verify needs no service at all.
 * Exit codes: 0 done (verify: verified, every proof checked and holding), 1 failed (verify: some
 * proof fails), 2 usage error, 3 verify: nothing failed, but some proof was not established
 * (pending on the ledger, or a trust anchor not pinned, or no --rpc, or a key newer than the trust file).
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isSha256Hex } from '../crypto/hash.js';
import { RpcReader } from '../ledger/rpc-reader.js';
import { readAttachments } from '../pdf/attachments.js';
import { CliError, UsageError, anchorFile, chainStatePath, generateDeviceKey, hashWithProgress, serviceOf, writeKeyFile } from './client.js';
import { syncFolder } from './sync.js';
import { addTrustedService, describeService, pinnedAnchors, readTrustFile, removeTrustedService, trustFilePath } from './trust.js';
import { formatReport } from './receipt-report.js';
import { type VerifySubject, verifyReceipt } from './verify-receipt.js';
import { type EvidenceStatus, foldStatus } from '../evidence/verdict.js';
import { formatStandalone, verifySignatureFile, verifyTimestampFile } from './verify-standalone.js';
import { verifyPdfSignature } from './verify-pdf-signature.js';
import { verifyEvidenceRecordFile } from './verify-evidence-record.js';
import { c2paSign } from './c2pa-sign.js';
import { type C2paReport, c2paReport, formatC2pa, mayCarryC2pa } from './c2pa-report.js';

export const USAGE = `Usage: evidence <command> [options]

Commands:
  keygen [--out device-key.json]
      Create a device Ed25519 key (file mode 0600). Its chain state is kept next to it
      (device-key.chain.json). Keep both: the chain continues from them.

  anchor <file> [--url http://127.0.0.1:3000] [--key device-key.json]
      Hash the file, sign the hash with the device key, anchor it (ML-DSA-65 signature, RFC 3161
      timestamp, ledger transaction) and save the receipt as <file>.receipt.json.
      The API key comes from the EVIDENCE_API_KEY environment variable. Only the hash is sent.

  sync <folder> [--url http://127.0.0.1:3000] [--key device-key.json]
      Anchor every photo of the folder that has no <file>.receipt.json yet, as the next links of
      the device chain, 100 to a request (POST /api/v2/evidence/anchor/batch), and save each
      receipt beside its photo. Killed and run again, it completes the folder: the links it had
      planned are sent again unchanged, so nothing is anchored or charged twice. Progress
      (done/total) on stderr. EVIDENCE_SYNC_CHUNK (1 to 100) sends fewer entries per request.

  verify <file|sha256> [--receipt <file>.receipt.json] [--root tsa-root.pem] [--pq-root pq-root.pem] [--rpc URL]
         [--pq-key FINGERPRINT] [--wallet 0xADDRESS] [--min-confirmations N]
         [--timestamp t.json] [--signature s.json] [--jwks jwks.json] [--evidence-record <sha256>.ers]
         [--c2pa-anchors signer-roots.pem] [--trust-file F] [--json]
      Check a receipt without the service, with the verdict the service's own readers give: the
      file's SHA-256, the statement (RFC 8785, server_hash), the ML-DSA-65 signature and key, the
      RFC 3161 token (signature, imprint, ESSCertIDv2, EKU, chain to the root), the Merkle
      inclusion of a batched anchor, the device's Ed25519 signature and chain link and, with
      --rpc, the ledger transaction's input data, confirmations and sender. Each proof holds,
      fails, is pending or unchecked (never counted as holding).
      --certificate cert.pdf takes the receipt attached to a PDF evidence certificate instead,
      and checks the PDF's own signature: PAdES over the whole file, its RFC 3161 signature
      timestamp, and the signing certificate within its validity window at that time (pinned by
      the trust file, or issued under the --root TSA root; with neither it is not checked: use
      pdfsig).
      --timestamp checks a stand-alone timestamp (POST /api/v2/evidence/timestamp) and
      --signature an Ed25519 signature (POST /api/v2/evidence/sign) against the file; with either,
      the receipt is checked only when --receipt names it.
      A receipt's post-quantum timestamp (timestamp_pq, ML-DSA-65), and a stand-alone one made
      with the post-quantum policy, is checked against the post-quantum TSA root (--pq-root, or
      the trust file). Every token is judged as of its
      genTime; with the trust file, a token dated after its TSA certificate's retirement fails.
      --evidence-record checks an RFC 4998 evidence record (GET /api/v2/evidence/evidence-record/
      <sha256>) against the file: each archive timestamp's hash tree and RFC 3161 token as of its
      genTime, against the TSA root, and each renewal; a chain of another hash than SHA-256 (a
      hash-tree renewal) needs the file itself, not only its hash (fetch that record with
      ?sha512=<the file's SHA-512>; without it the service serves the SHA-256 chain).
      Trust anchors: the TSA root (--root), the ML-DSA-65 key (--pq-key), the ledger wallet
      (--wallet) and the Ed25519 keys (--jwks) are pinned by those flags or, without them, by the
      trust file (evidence trust add). A proof checked against an anchor that is not pinned is
      "unchecked": the receipt is then consistent with itself, not verified.
      A JPEG with C2PA Content Credentials also gets the official C2PA reader's verdict on its
      manifest (state, signer, signing time, whether our TSA made its time-stamp), shown apart:
      it never changes ours or the exit code. The reader trusts the service's TSA roots (--root,
      or the trust file) for time-stamps and --c2pa-anchors (PEM) for signers.

  c2pa sign <photo.jpg> --out <signed.jpg> --signer-cert <chain.pem> --signer-key <key.pem> [--url http://127.0.0.1:3000]
      Embed C2PA Content Credentials in a JPEG with the official C2PA builder: a manifest (claim
      v2, a c2pa.created action) signed with your certificate and key (ES256: an EC P-256 key),
      its signature time-stamped by the service's TSA (POST /api/v2/tsa, one time-stamp of your
      quota; only the signature's SHA-256 is sent). A reader that trusts the service's TSA root
      trusts the signing time, and the signature after your certificate expires. The certificate
      must meet C2PA's profile (end entity, keyUsage digitalSignature, extendedKeyUsage
      emailProtection, documentSigning or C2PA's, authorityKeyIdentifier, valid now); one that
      does not is refused before anything is sent. The API key comes from EVIDENCE_API_KEY.
      Then anchor the signed file as any photo: evidence anchor <signed.jpg>. (docs/c2pa.md)

  trust add <base-url> | trust list | trust remove <base-url>   [--trust-file F]
      Fetch a service's trust anchors once (its TSA roots, classic and post-quantum, every TSA
      certificate and PDF signing certificate with its validity window, JWK set, chain id and
      wallet address, from /.well-known/evidence-trust-anchors.json and /.well-known/jwks.json)
      into the trust file (EVIDENCE_TRUST_FILE, else ~/.config/evidence/trust.json). Compare the
      fingerprints it prints with the ones the operator publishes. Later verify runs use them
      with no flags.

Exit codes: 0 done (verify: verified: every proof checked and holds), 1 failed (verify: a proof
fails), 2 usage error, 3 verify: not established (nothing failed, but a proof is pending or
unchecked: no --rpc, a trust anchor not pinned, too few confirmations, a key the service made
after the trust file was written: refresh it with evidence trust add <url>).`;

/** Where the CLI writes: results on stdout, progress and errors on stderr. */
export interface EvidenceIo {
  out(line: string): void;
  err(line: string): void;
  /** A status line redrawn in place (progress on a terminal); absent where there is none. */
  status?(text: string): void;
}

const consoleIo: EvidenceIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  ...(process.stderr.isTTY ? { status: (text: string) => process.stderr.write(`\r\x1b[K${text}`) } : {}),
};

const DEFAULT_KEY = 'device-key.json';


/** Runs one command; resolves to the exit code. */
export async function main(argv: readonly string[], io: EvidenceIo = consoleIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.err : io.out)(USAGE);
    return command === undefined ? 2 : 0;
  }
  try {
    switch (command) {
      case 'keygen':
        return await keygen(rest, io);
      case 'anchor':
        return await anchor(rest, io, env);
      case 'sync':
        return await sync(rest, io, env);
      case 'verify':
        return await verify(rest, io, env);
      case 'trust':
        return await trust(rest, io, env);
      case 'c2pa':
        return await c2pa(rest, io, env);
      default:
        throw new UsageError(`Unknown command "${command}".`);
    }
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`evidence: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof CliError) {
      io.err(`evidence: ${error.message}`);
      return error.exitCode;
    }
    io.err(`evidence: unexpected error: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

async function keygen(args: string[], io: EvidenceIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { out: { type: 'string', short: 'o' } }, allowPositionals: true });
  if (positionals.length > 0) throw new UsageError('keygen takes no file argument; use --out.');
  const out = values.out ?? DEFAULT_KEY;
  const key = generateDeviceKey();
  await writeKeyFile(out, key);
  io.out(`Device key written to ${out} (mode 0600). Public key: ${key.public_key_hex}`);
  io.out(`Its chain state will be kept in ${chainStatePath(out)}. Back up both files; the private key never leaves this machine.`);
  return 0;
}

async function anchor(args: string[], io: EvidenceIo, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { url: { type: 'string' }, key: { type: 'string', short: 'k' } },
    allowPositionals: true,
  });
  if (positionals.length !== 1 || !positionals[0]) throw new UsageError('anchor needs exactly one file.');
  const { url, apiKey } = serviceOf(values.url, env);
  const result = await anchorFile({ file: positionals[0], keyFile: values.key ?? DEFAULT_KEY, url, apiKey, progress: (l) => io.err(l) });
  io.out(`anchored ${result.anchor.image_hash}`);
  io.out(`  server_hash  ${result.anchor.server_hash}`);
  io.out(`  chain index  ${result.chainIndex}`);
  io.out(`  ledger tx    ${result.anchor.tx_hash}${result.anchor.blockchain_anchored ? '' : ' (pending)'}`);
  io.out(`  explorer     ${result.anchor.ledgerscan_url}`);
  io.out(`  receipt      ${result.receiptFile}`);
  io.out(`  verify page  ${url}/verify/${result.anchor.image_hash}`);
  io.out(`Check it offline: evidence verify ${positionals[0]} --root tsa-root.pem`);
  return 0;
}

async function sync(args: string[], io: EvidenceIo, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { url: { type: 'string' }, key: { type: 'string', short: 'k' } }, allowPositionals: true });
  if (positionals.length !== 1 || !positionals[0]) throw new UsageError('sync needs exactly one folder.');
  const { url, apiKey } = serviceOf(values.url, env);
  const chunk = env.EVIDENCE_SYNC_CHUNK ? Number(env.EVIDENCE_SYNC_CHUNK) : undefined;
  if (chunk !== undefined && !(Number.isInteger(chunk) && chunk >= 1 && chunk <= 100)) throw new UsageError('EVIDENCE_SYNC_CHUNK must be an integer from 1 to 100.');
  const done = await syncFolder({ folder: positionals[0], keyFile: values.key ?? DEFAULT_KEY, url, apiKey, io, ...(chunk ? { chunk } : {}) });
  io.out(`synced ${done.anchored} photo${done.anchored === 1 ? '' : 's'} of ${done.total} without a receipt; ${done.receipts} receipt${done.receipts === 1 ? '' : 's'} saved beside ${done.receipts === 1 ? 'its photo' : 'their photos'}`);
  for (const line of done.notes) io.out(`  ${line}`);
  return 0;
}

async function c2pa(args: string[], io: EvidenceIo, env: NodeJS.ProcessEnv): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'sign') throw new UsageError('c2pa takes: sign <photo.jpg> --out <signed.jpg> --signer-cert <chain.pem> --signer-key <key.pem>.');
  const { values, positionals } = parseArgs({
    args: rest,
    options: { out: { type: 'string', short: 'o' }, 'signer-cert': { type: 'string' }, 'signer-key': { type: 'string' }, url: { type: 'string' } },
    allowPositionals: true,
  });
  const photo = positionals[0];
  if (positionals.length !== 1 || !photo) throw new UsageError('c2pa sign needs exactly one JPEG.');
  const { out, 'signer-cert': signerCert, 'signer-key': signerKey } = values;
  if (!out || !signerCert || !signerKey) throw new UsageError('c2pa sign needs --out, --signer-cert and --signer-key.');
  if (path.resolve(out) === path.resolve(photo)) throw new UsageError('--out must name a new file, not the photo itself.');
  const { url, apiKey } = serviceOf(values.url, env);
  const result = await c2paSign({ photo, out, signerCert, signerKey, url, apiKey, progress: (l) => io.err(l) });
  io.out(`signed ${out}: Content Credentials (C2PA) by ${result.signer}, time-stamped by ${url} at ${result.genTime.toISOString()}`);
  io.out(`  COSE signature ${result.coseLength} bytes of the ${result.reserveSize} reserved`);
  io.out(`Anchor it as any photo: evidence anchor ${out}`);
  return 0;
}

async function trust(args: string[], io: EvidenceIo, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { 'trust-file': { type: 'string' } }, allowPositionals: true });
  const file = trustFilePath(values['trust-file'], env);
  const [sub, url] = positionals;
  if (sub === 'add' && url && positionals.length === 2) {
    try {
      new URL(url);
    } catch {
      throw new UsageError(`${url} is not a URL.`);
    }
    const service = await addTrustedService(file, url);
    io.out(`Trusted ${service.base_url}; its anchors are in ${file}. Compare these with what the operator publishes:`);
    for (const line of describeService(service)) io.out(line);
    return 0;
  }
  if (sub === 'list' && positionals.length === 1) {
    const t = await readTrustFile(file);
    if (t.services.length === 0) io.out(`No trusted service in ${file}. Add one: evidence trust add <base-url>`);
    for (const s of t.services) for (const line of describeService(s)) io.out(line);
    return 0;
  }
  if (sub === 'remove' && url && positionals.length === 2) {
    if (!(await removeTrustedService(file, url))) throw new CliError(`${url} is not in ${file}.`);
    io.out(`Removed ${url} from ${file}.`);
    return 0;
  }
  throw new UsageError('trust takes: add <base-url>, list, or remove <base-url>.');
}

async function readJsonFile(file: string, what: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`No ${what} at ${file}.`);
    throw new CliError(`${file} is not a JSON ${what}.`);
  }
}

async function verify(args: string[], io: EvidenceIo, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      receipt: { type: 'string', short: 'r' },
      certificate: { type: 'string' },
      rpc: { type: 'string' },
      root: { type: 'string' },
      'pq-root': { type: 'string' },
      'pq-key': { type: 'string' },
      wallet: { type: 'string' },
      timestamp: { type: 'string' },
      signature: { type: 'string' },
      'evidence-record': { type: 'string' },
      jwks: { type: 'string' },
      'trust-file': { type: 'string' },
      'min-confirmations': { type: 'string' },
      'c2pa-anchors': { type: 'string' },
      json: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  const target = positionals[0];
  if (positionals.length !== 1 || !target) throw new UsageError('verify needs exactly one file or SHA-256 hash.');
  const progress = values.json ? () => {} : (line: string) => io.err(line);

  const standalone = values.timestamp !== undefined || values.signature !== undefined || values['evidence-record'] !== undefined;
  let subject: VerifySubject;
  if (values.receipt !== undefined && values.certificate !== undefined) throw new UsageError('verify takes --receipt or --certificate, not both.');
  let receiptFile = values.receipt ?? values.certificate;
  const isFile = await stat(target).then((s) => s.isFile(), () => false);
  if (isFile) {
    const { hash } = await hashWithProgress(target, progress);
    subject = { kind: 'file', name: path.basename(target), sha256: hash };
    if (!standalone) receiptFile ??= `${target}.receipt.json`;
  } else if (isSha256Hex(target)) {
    subject = { kind: 'hash', hash: target.toLowerCase() };
    if (!receiptFile && !standalone) throw new UsageError('verify <hash> needs --receipt receipt.json or --certificate cert.pdf (or --timestamp / --signature / --evidence-record).');
  } else {
    throw new CliError(`No such file: ${target} (nor is it a SHA-256 hash).`);
  }

  // Trust anchors: the flags, else the trust file.
  const trustFile = trustFilePath(values['trust-file'], env);
  const trusted = pinnedAnchors(await readTrustFile(trustFile), trustFile);
  let rootPem: string | undefined;
  if (values.root !== undefined) {
    try {
      rootPem = await readFile(values.root, 'utf8');
    } catch {
      throw new CliError(`Cannot read the root certificate ${values.root}.`);
    }
    if (!rootPem.includes('-----BEGIN CERTIFICATE-----')) throw new CliError(`${values.root} is not a PEM certificate.`);
  }
  const roots = rootPem !== undefined ? [rootPem] : (trusted?.roots ?? []);
  const rootSource = rootPem !== undefined ? values.root : trusted?.source;
  // The post-quantum TSA root (ML-DSA-65), for a receipt's timestamp_pq: --pq-root, else the trust file.
  let pqRoots = trusted?.pqRoots ?? [];
  if (values['pq-root'] !== undefined) {
    let text: string;
    try {
      text = await readFile(values['pq-root'], 'utf8');
    } catch {
      throw new CliError(`Cannot read the post-quantum root certificate ${values['pq-root']}.`);
    }
    if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new CliError(`${values['pq-root']} is not a PEM certificate.`);
    pqRoots = [text];
  }
  let minConfirmations = 1;
  if (values['min-confirmations'] !== undefined) {
    minConfirmations = Number(values['min-confirmations']);
    if (!Number.isSafeInteger(minConfirmations) || minConfirmations < 1) throw new UsageError('--min-confirmations must be a positive integer.');
  }
  const pqKey = values['pq-key'];
  if (pqKey !== undefined && !isSha256Hex(pqKey)) throw new UsageError('--pq-key must be the 64-hex SHA-256 fingerprint of the ML-DSA-65 public key.');
  const wallet = values.wallet;
  if (wallet !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(wallet)) throw new UsageError('--wallet must be an address: 0x followed by 40 hex characters.');
  let jwksKeys: unknown[] = trusted?.jwks ?? [];
  let jwksSource = trusted?.source;
  if (values.jwks !== undefined) {
    const set = (await readJsonFile(values.jwks, 'JWK set')) as { keys?: unknown };
    if (!Array.isArray(set.keys)) throw new CliError(`${values.jwks} is not a JWK set ({"keys": [...]}).`);
    jwksKeys = set.keys;
    jwksSource = values.jwks;
  }
  let ledger: RpcReader | undefined;
  if (values.rpc !== undefined) {
    try {
      ledger = new RpcReader(values.rpc, { timeoutMs: 10_000 });
    } catch {
      throw new UsageError(`--rpc ${values.rpc} is not a URL.`);
    }
    progress(`Reading the ledger transaction from ${new URL(values.rpc).host}…`);
  }

  const name = subject.kind === 'file' ? subject.name : subject.hash;
  // Content Credentials: the official C2PA reader's verdict on the photo's manifest, shown first and
  // kept apart from ours (lib/cli/c2pa-report.ts): it changes neither our status nor the exit code.
  const c2pa = isFile ? await c2paOf(target, { roots, ...(rootSource ? { rootSource } : {}), anchorsFile: values['c2pa-anchors'] }, progress) : undefined;
  if (c2pa && !values.json) {
    io.out(`${name} — Content Credentials (C2PA), the official reader's verdict`);
    for (const line of formatC2pa(c2pa)) io.out(line);
    io.out('');
  }
  const reports: { status: EvidenceStatus; kind: string; file: string; report: unknown; lines: string[] }[] = [];
  // A certificate carries the receipt and, when the account made them, its stand-alone answers;
  // its own signature is checked against the pinned PDF signing certificates (or the TSA root).
  const attached = values.certificate !== undefined ? await attachedToCertificate(values.certificate) : undefined;
  let pdfReport: (typeof reports)[number] | undefined;
  if (attached && values.certificate !== undefined) {
    const report = await verifyPdfSignature({
      pdf: attached.pdf,
      // --root pins the TSA root in place of the trust file; the signer is then held to it.
      pdfSigners: rootPem !== undefined ? [] : (trusted?.pdfSigners ?? []),
      ...(rootPem === undefined && trusted ? { pdfSignersPinnedBy: trusted.snapshots } : {}),
      rootsPem: roots,
      ...(trusted && trusted.tsaRetirements.length > 0 ? { tsaRetirements: trusted.tsaRetirements } : {}),
      ...(rootSource ? { source: rootSource } : {}),
    });
    if (report) pdfReport = { status: report.status, kind: 'signature of the certificate', file: values.certificate, report, lines: formatStandalone(report) };
    else progress(`The signature of ${values.certificate} is not checked: nothing pins its signer (evidence trust add <url>, or --root); pdfsig checks it.`);
  }
  let receipt: unknown;
  if (attached && values.certificate !== undefined) {
    if (isRegistrationOnly(attached.receipt)) {
      if (!attached.timestamp && !attached.signature) return reportRegistration(attached.receipt, subject, values.certificate, io, pdfReport);
      const { ok, lines } = registrationLines(attached.receipt, subject);
      const { image_hash, registered_at } = attached.receipt;
      const status: EvidenceStatus = ok ? 'verified' : 'failed';
      reports.push({ status, kind: 'record attached to the certificate', file: values.certificate, report: { status, ok, image_hash, registered_at }, lines });
    } else receipt = attached.receipt;
  } else if (receiptFile !== undefined) {
    try {
      receipt = JSON.parse(await readFile(receiptFile, 'utf8')) as unknown;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new CliError(`No receipt at ${receiptFile}. Download it from GET /api/v2/evidence/receipt/<sha256> or pass --receipt.`);
      }
      throw new CliError(`${receiptFile} is not a JSON receipt.`);
    }
  }
  if (receiptFile !== undefined && receipt !== undefined) {
    progress(`Verifying against ${receiptFile}…`);
    const report = await verifyReceipt({
      receipt,
      subject,
      ...(roots.length > 0 ? { rootsPem: roots, ...(rootSource ? { rootSource } : {}) } : {}),
      ...(pqRoots.length > 0 ? { pqRootsPem: pqRoots } : {}),
      ...(trusted && trusted.tsaRetirements.length > 0 ? { tsaRetirements: trusted.tsaRetirements } : {}),
      ...(ledger ? { ledger } : {}),
      minConfirmations,
      ...(pqKey ? { pqKeyFingerprints: [pqKey], pqKeySource: '--pq-key' } : trusted ? { pqKeys: trusted.pqKeys, pqKeySource: trusted.source, pqKeysPinnedBy: trusted.snapshots } : {}),
      ...(wallet
        ? { wallets: [wallet], walletSource: '--wallet' }
        : trusted
          ? { wallets: trusted.wallets, walletSource: trusted.source, walletWindows: trusted.walletWindows, walletsPinnedBy: trusted.snapshots }
          : {}),
    });
    const kind = values.certificate !== undefined ? 'receipt attached to the certificate' : 'receipt';
    reports.push({ status: report.status, kind, file: receiptFile, report, lines: formatReport(report) });
  }
  if (pdfReport) reports.push(pdfReport);
  // --timestamp / --signature files, and the answers attached to a certificate (same verifiers).
  const timestamps: { file: string; response: unknown }[] = [];
  const signatures: { file: string; response: unknown }[] = [];
  if (values.timestamp !== undefined) timestamps.push({ file: values.timestamp, response: await readJsonFile(values.timestamp, 'timestamp answer') });
  if (attached?.timestamp !== undefined) timestamps.push({ file: `${values.certificate ?? ''} (timestamp.json)`, response: attached.timestamp });
  if (values.signature !== undefined) signatures.push({ file: values.signature, response: await readJsonFile(values.signature, 'signature answer') });
  if (attached?.signature !== undefined) signatures.push({ file: `${values.certificate ?? ''} (signature.json)`, response: attached.signature });
  for (const { file, response } of timestamps) {
    // A stand-alone answer holds a classic token or, when its request chose the post-quantum policy, an ML-DSA-65 one.
    const report = await verifyTimestampFile({ response, subject, rootsPem: [...roots, ...pqRoots], ...(rootSource ? { rootSource } : {}), ...(trusted ? { tsaRetirements: trusted.tsaRetirements } : {}) });
    reports.push({ status: report.status, kind: 'timestamp', file, report, lines: formatStandalone(report) });
  }
  if (values['evidence-record'] !== undefined) {
    const file = values['evidence-record'];
    progress(`Verifying the evidence record ${file}…`);
    const report = await verifyEvidenceRecordFile({ file, subject, ...(isFile ? { dataPath: target } : {}), rootsPem: roots, ...(rootSource ? { rootSource } : {}), ...(trusted ? { tsaRetirements: trusted.tsaRetirements } : {}) });
    const { lines, ...json } = report;
    reports.push({ status: report.status, kind: 'evidence record', file, report: json, lines });
  }
  for (const { file, response } of signatures) {
    const report = verifySignatureFile({ response, subject, jwks: jwksKeys, ...(jwksSource ? { jwksSource } : {}), ...(values.jwks === undefined && trusted ? { jwksPinnedBy: trusted.snapshots } : {}) });
    reports.push({ status: report.status, kind: 'signature', file, report, lines: formatStandalone(report) });
  }
  // Several reports: the one rule again (failed if any fails, else not established if any is, else verified).
  const status = foldStatus(reports.map((r) => r.status));
  if (values.json) {
    // One receipt alone prints its report; several print an object keyed by kind.
    const only = reports.length === 1 && reports[0]?.kind === 'receipt' ? reports[0].report : undefined;
    const ours = only ?? { status, ok: status === 'verified', ...Object.fromEntries(reports.map((r) => [r.kind, r.report])) };
    io.out(JSON.stringify(c2pa ? { ...(ours as object), c2pa } : ours, null, 2));
  } else {
    reports.forEach((r, i) => {
      if (i > 0) io.out('');
      io.out(`${name} — ${r.kind} ${r.file}`);
      for (const line of r.lines) io.out(line);
    });
  }
  return EXIT_CODE[status];
}

/**
 * The C2PA report of a JPEG that carries a manifest (undefined for any other file): the reader
 * trusts the service's TSA roots for time-stamps and the --c2pa-anchors file for signers.
 */
async function c2paOf(file: string, trust: { roots: string[]; rootSource?: string; anchorsFile: string | undefined }, progress: (line: string) => void): Promise<C2paReport | undefined> {
  const bytes = new Uint8Array(await readFile(file));
  if (!mayCarryC2pa(bytes)) return undefined;
  let manifest: string[] = [];
  if (trust.anchorsFile !== undefined) {
    let text: string;
    try {
      text = await readFile(trust.anchorsFile, 'utf8');
    } catch {
      throw new CliError(`Cannot read the C2PA signer roots ${trust.anchorsFile}.`);
    }
    if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new CliError(`${trust.anchorsFile} is not a PEM certificate file.`);
    manifest = [text];
  }
  progress('Reading its C2PA manifest with the official reader…');
  return c2paReport(bytes, {
    manifest,
    ...(trust.anchorsFile !== undefined ? { manifestSource: trust.anchorsFile } : {}),
    tsa: trust.roots,
    ...(trust.rootSource ? { tsaSource: trust.rootSource } : {}),
  });
}

/** verify's exit code for a status (USAGE). */
const EXIT_CODE: Record<EvidenceStatus, number> = { verified: 0, failed: 1, pending: 3 };

/**
 * The files attached to a PDF evidence certificate (GET /api/v2/evidence/certificate/{hash}):
 * receipt.json, and the account's stand-alone answers timestamp.json and signature.json when it
 * made them (each in the shape the API answered), with the file's bytes (its signature is checked too).
 */
async function attachedToCertificate(file: string): Promise<{ pdf: Uint8Array; receipt: unknown; timestamp?: unknown; signature?: unknown }> {
  let pdf: Buffer;
  try {
    pdf = await readFile(file);
  } catch {
    throw new CliError(`Cannot read the certificate ${file}.`);
  }
  let attachments;
  try {
    attachments = await readAttachments(pdf);
  } catch {
    throw new CliError(`${file} is not a PDF.`);
  }
  const parsed = (name: string): unknown => {
    const attached = attachments.find((a) => a.name === name);
    if (!attached) return undefined;
    try {
      return JSON.parse(Buffer.from(attached.bytes).toString('utf8')) as unknown;
    } catch {
      throw new CliError(`The ${name} attached to ${file} is not JSON.`);
    }
  };
  const receipt = parsed('receipt.json');
  if (receipt === undefined) throw new CliError(`${file} has no attached receipt.json: is it an evidence certificate?`);
  const timestamp = parsed('timestamp.json');
  const signature = parsed('signature.json');
  return { pdf, receipt, ...(timestamp !== undefined ? { timestamp } : {}), ...(signature !== undefined ? { signature } : {}) };
}

/** A certificate of a hash that was only registered carries no proof to check, only the hash. */
function isRegistrationOnly(receipt: unknown): receipt is { image_hash: string; registered_at: string | null } {
  return typeof receipt === 'object' && receipt !== null && (receipt as { anchored?: unknown }).anchored === false;
}

function reportRegistration(
  receipt: { image_hash: string; registered_at: string | null },
  subject: VerifySubject,
  file: string,
  io: EvidenceIo,
  signature?: { status: EvidenceStatus; kind: string; lines: string[] },
): number {
  const { ok, lines } = registrationLines(receipt, subject);
  const name = subject.kind === 'file' ? subject.name : subject.hash;
  io.out(`${name} — certificate ${file}`);
  for (const line of lines) io.out(line);
  io.out(`  The hash was registered at ${receipt.registered_at ?? 'an unknown time'}; it has no timestamp, signature or ledger proof to check.`);
  if (signature) {
    io.out('');
    io.out(`${name} — ${signature.kind} ${file}`);
    for (const line of signature.lines) io.out(line);
  }
  return EXIT_CODE[foldStatus([ok ? 'verified' : 'failed', ...(signature ? [signature.status] : [])])];
}

/** Whether the file is the hash of a certificate's registration record (no anchor receipt). */
function registrationLines(receipt: { image_hash: string }, subject: VerifySubject): { ok: boolean; lines: string[] } {
  const actual = subject.kind === 'file' ? subject.sha256 : subject.hash;
  const same = actual === receipt.image_hash;
  return { ok: same, lines: [`  ${same ? 'pass' : 'FAIL'}  file SHA-256 ${same ? 'is' : 'is not'} the certificate's hash ${receipt.image_hash}`] };
}
