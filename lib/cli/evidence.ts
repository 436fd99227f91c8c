/**
 * `evidence`: the command-line client (bin/evidence.mjs runs it).
 *
 *     evidence keygen [--out device-key.json]
 *     evidence anchor photo.jpg [--url http://127.0.0.1:3000] [--key device-key.json]
 *     evidence verify <photo.jpg|hash> [--receipt photo.jpg.receipt.json] [--rpc URL] [--root tsa-root.pem]
 *
 * keygen and anchor use only the public REST API; verify needs no service at all.
 * Exit codes: 0 done (verify: every check that ran passed), 1 failed, 2 usage error.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isSha256Hex } from '../crypto/hash.js';
import { RpcReader } from '../ledger/rpc-reader.js';
import { CliError, anchorFile, chainStatePath, generateDeviceKey, hashWithProgress, writeKeyFile } from './client.js';
import { type VerifySubject, formatReport, verifyReceipt } from './verify-receipt.js';

export const USAGE = `Usage: evidence <command> [options]

Commands:
  keygen [--out device-key.json]
      Create a device Ed25519 key (file mode 0600). Its chain state is kept next to it
      (device-key.chain.json). Keep both: the chain continues from them.

  anchor <file> [--url http://127.0.0.1:3000] [--key device-key.json]
      Hash the file, sign the hash with the device key, anchor it (ML-DSA-65 signature, RFC 3161
      timestamp, ledger transaction) and save the receipt as <file>.receipt.json.
      The API key comes from the EVIDENCE_API_KEY environment variable. Only the hash is sent.

  verify <file|sha256> [--receipt <file>.receipt.json] [--root tsa-root.pem] [--rpc URL]
         [--pq-key FINGERPRINT] [--min-confirmations N] [--json]
      Check a receipt without the service: the file's SHA-256, the device's Ed25519 signature, the
      chain hash rule, server_hash (RFC 8785), the ML-DSA-65 signature, the RFC 3161 token
      (signature, imprint, ESSCertIDv2, EKU, chain to the root) and, with --rpc, the ledger
      transaction's input data and confirmations. Without --root the TSA root inside the receipt
      is used, which proves internal consistency only: pin the TSA's published root with --root.

Exit codes: 0 done (verify: every check that ran passed), 1 failed, 2 usage error.`;

/** Where the CLI writes: results on stdout, progress and errors on stderr. */
export interface EvidenceIo {
  out(line: string): void;
  err(line: string): void;
}

const consoleIo: EvidenceIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

const DEFAULT_URL = 'http://127.0.0.1:3000';
const DEFAULT_KEY = 'device-key.json';

class UsageError extends Error {}

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
      case 'verify':
        return await verify(rest, io);
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
  const apiKey = env.EVIDENCE_API_KEY;
  if (!apiKey) throw new CliError('Set EVIDENCE_API_KEY to an API key of your account (it is shown once, at register or when a key is created).');
  const url = (values.url ?? env.EVIDENCE_URL ?? DEFAULT_URL).replace(/\/+$/, '');
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url ${url} is not a URL.`);
  }
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

async function verify(args: string[], io: EvidenceIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      receipt: { type: 'string', short: 'r' },
      rpc: { type: 'string' },
      root: { type: 'string' },
      'pq-key': { type: 'string' },
      'min-confirmations': { type: 'string' },
      json: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  const target = positionals[0];
  if (positionals.length !== 1 || !target) throw new UsageError('verify needs exactly one file or SHA-256 hash.');
  const progress = values.json ? () => {} : (line: string) => io.err(line);

  let subject: VerifySubject;
  let receiptFile = values.receipt;
  const isFile = await stat(target).then((s) => s.isFile(), () => false);
  if (isFile) {
    const { hash } = await hashWithProgress(target, progress);
    subject = { kind: 'file', name: path.basename(target), sha256: hash };
    receiptFile ??= `${target}.receipt.json`;
  } else if (isSha256Hex(target)) {
    subject = { kind: 'hash', hash: target.toLowerCase() };
    if (!receiptFile) throw new UsageError('verify <hash> needs --receipt receipt.json.');
  } else {
    throw new CliError(`No such file: ${target} (nor is it a SHA-256 hash).`);
  }

  let receipt: unknown;
  try {
    receipt = JSON.parse(await readFile(receiptFile, 'utf8')) as unknown;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new CliError(`No receipt at ${receiptFile}. Download it from GET /api/v2/evidence/receipt/<sha256> or pass --receipt.`);
    }
    throw new CliError(`${receiptFile} is not a JSON receipt.`);
  }

  let rootPem: string | undefined;
  if (values.root !== undefined) {
    try {
      rootPem = await readFile(values.root, 'utf8');
    } catch {
      throw new CliError(`Cannot read the root certificate ${values.root}.`);
    }
    if (!rootPem.includes('-----BEGIN CERTIFICATE-----')) throw new CliError(`${values.root} is not a PEM certificate.`);
  }
  let minConfirmations = 1;
  if (values['min-confirmations'] !== undefined) {
    minConfirmations = Number(values['min-confirmations']);
    if (!Number.isSafeInteger(minConfirmations) || minConfirmations < 1) throw new UsageError('--min-confirmations must be a positive integer.');
  }
  const pqKey = values['pq-key'];
  if (pqKey !== undefined && !isSha256Hex(pqKey)) throw new UsageError('--pq-key must be the 64-hex SHA-256 fingerprint of the ML-DSA-65 public key.');
  let ledger: RpcReader | undefined;
  if (values.rpc !== undefined) {
    try {
      ledger = new RpcReader(values.rpc, { timeoutMs: 10_000 });
    } catch {
      throw new UsageError(`--rpc ${values.rpc} is not a URL.`);
    }
    progress(`Reading the ledger transaction from ${new URL(values.rpc).host}…`);
  }

  progress(`Verifying against ${receiptFile}…`);
  const report = await verifyReceipt({
    receipt,
    subject,
    ...(rootPem !== undefined ? { rootPem, rootSource: values.root } : {}),
    ...(ledger ? { ledger } : {}),
    minConfirmations,
    ...(pqKey ? { pqKeyFingerprint: pqKey } : {}),
  });
  if (values.json) {
    io.out(JSON.stringify(report, null, 2));
  } else {
    io.out(`${subject.kind === 'file' ? subject.name : subject.hash} — receipt ${receiptFile}`);
    for (const line of formatReport(report)) io.out(line);
  }
  return report.ok ? 0 : 1;
}
