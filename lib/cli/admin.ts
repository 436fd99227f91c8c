import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type AccountDeps, getAccountDeps } from '../deps/accounts.js';
import { runQuotaReset, UnknownAccountError } from '../accounts/quota-reset.js';
import { isTierName, TIER_NAMES } from '../accounts/tiers.js';
import { ConfigError } from '../config.js';
import { getConfig, resetCoreDeps } from '../deps/core.js';
import { addKey, isRegistryKind, isRotatableKind, REGISTRY_KINDS, retireKey, ROTATABLE_KINDS, RotationRefused, prepareLocalWalletRotation, rotateLocalKey } from './rotate-key.js';
import { DomainError } from '../errors.js';

// Lambda runs nodejs24.x; locally Node 20 is supported, so the SDK's Node 22 notice is not repeated.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * Operators' CLI over the same domain code as the API, against the configured DynamoDB: the
 * running local stack or AWS (DEPLOYMENT=aws and credentials). Its configuration is npm start's
 * (lib/config.ts through lib/deps): given the variables the stack was started with
 * (DYNAMODB_PORT, LEDGER_RPC_PORT, DATA_DIR, …) it reaches that stack, on whatever ports.
 *
 *     npm run admin -- set-tier <email|account_id> <tier>
 *     npm run admin -- show <email|account_id>
 *     npm run admin -- reset-quotas [email|account_id]
 *     npm run admin -- register-pq-key
 *     npm run admin -- rotate-key <ml-dsa-65|ed25519|pdf-signing|ledger-wallet>
 *     npm run admin -- rotate-key <kind> --new <public key file|certificate|address> [--old <…>] [--kms-key-id ARN]
 *     npm run admin -- retire-key <kind> <kid|address|public key file>
 *     npm run admin -- rotate-tsa-leaf [--pq]
 *     npm run admin -- rotate-tsa-root [--pq]
 *     npm run admin -- record-tsa-retirement <cert.pem> --kind classic|pq --role leaf|root [--history F] [--at ISO]
 *     npm run admin -- issue-pq-tsa-cert --root-cert F --root-key F --public-key pub.der --out F
 *
 * Exit codes: 0 done, 1 failed (unknown account, unreachable database, bad configuration),
 * 2 usage error.
 */

export const USAGE = `Usage: npm run admin -- <command>

Commands:
  set-tier <email|account_id> <tier>   Move an account to a tier (${TIER_NAMES.join(', ')}).
  show <email|account_id>              Print the account, its keys and this month's usage (JSON).
  reset-quotas [email|account_id]      Without an account: delete every limit counter whose window
                                       has ended (what the monthly schedule runs). With one: reset
                                       that account's quota for the current month.
  register-pq-key                      Publish the ML-DSA-65 public key fingerprint on the ledger
                                       (once: a key already registered is not sent again).
  rotate-key <kind>                    Rotate a local key (${[...ROTATABLE_KINDS, 'ledger-wallet'].join(', ')}): make a new one,
                                       retire the old one now in the key registry (its validity
                                       window ends; what it signed before still verifies). Run it
                                       with the stack stopped. ledger-wallet: the next npm start
                                       funds the new wallet from the old one, then retires the old
                                       one and switches. Production: docs/runbook.md.
  rotate-key <kind> --new <material> [--old <material>] [--kms-key-id ARN]
                                       Production, step 1 (${REGISTRY_KINDS.join(', ')}): record
                                       the new key (its public key file, certificate or address)
                                       in KEY_REGISTRY_FILE, active from now; the old one (--old,
                                       when the registry does not know it yet) stays active
                                       until retire-key.
  retire-key <kind> <kid|material>     Production, step 2: the key's window ends now. A wallet is
                                       retired only once its transactions are all final.
  rotate-tsa-leaf [--pq]               New TSA certificate and key under the same root; the old
                                       certificate is retired (its tokens keep verifying), and
                                       the next npm start renews the evidence records under it.
                                       --pq: the post-quantum (ML-DSA-65) TSA. Local TSA only;
                                       stop npm start first (docs/runbook.md for KMS).
  rotate-tsa-root [--pq]               New TSA root, certificate and key; the old root and
                                       certificate are retired (tokens made before still verify).
  record-tsa-retirement <cert.pem> --kind classic|pq --role leaf|root [--history F] [--at ISO]
                                       Production: record that a TSA certificate stopped signing
                                       (its KMS key disabled) in the TSA history (TSA_HISTORY_FILE);
                                       deployed, the archive job renews the evidence records
                                       under a retired classic leaf.
  issue-pq-tsa-cert --root-cert F --root-key F --public-key pub.der --out F
                                       Production: the ML-DSA-65 TSA leaf for a KMS key's public
                                       key (DER SubjectPublicKeyInfo), signed by the PQ root's seed.

Reads the configuration npm start reads (the same variables and defaults): run it with the
variables the stack was started with (DYNAMODB_PORT or DYNAMODB_ENDPOINT, LEDGER_RPC_PORT,
DATA_DIR), or DEPLOYMENT=aws for AWS. Exit codes: 0 done, 1 failed, 2 usage error.`;

/**
 * What becomes of the RFC 4998 evidence records after a classic TSA retirement (their archive
 * timestamps are the classic TSA's; docs/decisions.md "Evidence records"): the archive job reads
 * the TSA history when it starts and renews the records under a retired leaf with the key it
 * signs with then. The commands write only the history; the database is the job's.
 */
const EVIDENCE_RECORDS_AFTER_ROTATION =
  'the archive job renews the evidence records whose last archive timestamp the retired leaf signed, under the new leaf, from its first pass after the next npm start';
const EVIDENCE_RECORDS_AFTER_RECORDING =
  'after the next deployment (it ships this history), the archive job renews the evidence records whose last archive timestamp this leaf signed, under the TSA key deployed then (deploy the new key first), from its first run: before the retirement when --at is later';
const EVIDENCE_RECORDS_ROOT = 'the archive job acts on the retirement of a leaf, not of a root: record the retired root\'s leaf too (--role leaf)';

/** Where the CLI writes (tests capture it). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

const consoleIo: CliIo = { out: (l) => console.log(l), err: (l) => console.error(l) };

/** Runs one command; resolves to the exit code. */
export async function runAdmin(argv: readonly string[], io: CliIo = consoleIo, resolve: () => AccountDeps = getAccountDeps): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.err : io.out)(USAGE);
    return command === undefined ? 2 : 0;
  }
  const usageError = (message: string) => {
    io.err(`${message}\n\n${USAGE}`);
    return 2;
  };
  try {
    switch (command) {
      case 'set-tier': {
        const [who, tier] = args;
        if (args.length !== 2 || !who || !tier) return usageError('set-tier needs an account and a tier.');
        if (!isTierName(tier)) return usageError(`Unknown tier "${tier}" (known: ${TIER_NAMES.join(', ')}).`);
        const deps = resolve();
        const account = await deps.accounts.find(who);
        if (!account) return fail(io, `No account "${who}".`);
        const result = await deps.accounts.setTier(account.account_id, tier);
        io.out(JSON.stringify({ ...result, email: account.email, previous_tier: account.tier }, null, 2));
        return 0;
      }
      case 'show': {
        const [who] = args;
        if (args.length !== 1 || !who) return usageError('show needs one account (e-mail or id).');
        const deps = resolve();
        const account = await deps.accounts.find(who);
        if (!account) return fail(io, `No account "${who}".`);
        const [info, keys, usage] = await Promise.all([
          deps.accounts.info(account.account_id),
          deps.apiKeys.list(account.account_id),
          deps.limits.usage(account.account_id, account.tier),
        ]);
        io.out(JSON.stringify({ ...info, keys, usage }, null, 2));
        return 0;
      }
      case 'reset-quotas': {
        if (args.length > 1) return usageError('reset-quotas takes at most one account.');
        const result = await runQuotaReset({ account: args[0], deps: resolve() });
        io.out(JSON.stringify(result, null, 2));
        return 0;
      }
      case 'register-pq-key': {
        if (args.length > 0) return usageError('register-pq-key takes no arguments.');
        // Loaded on demand: it brings the signer and the ledger sender (ethers) with it.
        const [{ ensurePqKeyRegistered }, { getPqRegistrationDeps }] = await Promise.all([
          import('../evidence/pq-registration.js'),
          import('../deps/anchoring.js'),
        ]);
        io.out(JSON.stringify(await ensurePqKeyRegistered(await getPqRegistrationDeps()), null, 2));
        return 0;
      }
      case 'rotate-key': {
        const [kind, ...rest] = args;
        if (rest.length > 0) {
          if (!kind || !isRegistryKind(kind)) return usageError(`Unknown kind of key "${kind ?? ''}" (known: ${REGISTRY_KINDS.join(', ')}).`);
          const flags = new Map<string, string>();
          for (let i = 0; i < rest.length; i += 2) {
            const [name, value] = [rest[i] ?? '', rest[i + 1]];
            if (!['--new', '--old', '--kms-key-id'].includes(name) || value === undefined || flags.has(name)) return usageError('rotate-key <kind> --new <material> [--old <material>] [--kms-key-id ARN]');
            flags.set(name, value);
          }
          const material = flags.get('--new');
          if (!material) return usageError('rotate-key <kind> --new <material> [--old <material>] [--kms-key-id ARN]');
          const kmsKeyId = flags.get('--kms-key-id');
          const previous = flags.get('--old');
          const entry = await addKey(getConfig().keyRegistryFile, kind, material, { ...(kmsKeyId ? { kmsKeyId } : {}), ...(previous ? { previous } : {}) });
          io.out(JSON.stringify({ added: entry, registry: getConfig().keyRegistryFile, next: `deploy with the new key; then disable the old one and run retire-key ${kind} <old kid>` }, null, 2));
          return 0;
        }
        if (args.length !== 1 || !kind) return usageError('rotate-key needs one kind of key.');
        if (!isRotatableKind(kind) && kind !== 'ledger-wallet') return usageError(`Unknown kind of key "${kind}" (known: ${[...ROTATABLE_KINDS, 'ledger-wallet'].join(', ')}).`);
        // A running stack keeps signing with the key it loaded: after the rotation that would be a
        // retired key. Its API port in use is taken as "running" (npm start binds it).
        const config = getConfig();
        const { stackHoldsPort } = await import('./stack-stopped.js');
        if (await stackHoldsPort(config)) {
          return fail(io, `Not rotated: port ${config.port} (PORT) on ${config.host} is in use; stop npm start first (a running stack keeps signing with the key it loaded).`);
        }
        io.out(JSON.stringify(kind === 'ledger-wallet' ? await prepareLocalWalletRotation(config) : await rotateLocalKey(config, kind), null, 2));
        return 0;
      }
      case 'retire-key': {
        const [kind, which] = args;
        if (args.length !== 2 || !kind || !which) return usageError('retire-key needs a kind of key and the key (kid, address or public key file).');
        if (!isRegistryKind(kind)) return usageError(`Unknown kind of key "${kind}" (known: ${REGISTRY_KINDS.join(', ')}).`);
        const config = getConfig();
        const unfinished = async (address: string) => {
          const [{ unfinishedTransactions }, { getDb }] = await Promise.all([import('../ledger/drain.js'), import('../deps/core.js')]);
          return unfinishedTransactions(getDb(), config.tables.ledger, config.ledger.chainId, address);
        };
        io.out(JSON.stringify({ retired: await retireKey(config.keyRegistryFile, kind, which, { unfinished }), registry: config.keyRegistryFile }, null, 2));
        return 0;
      }
      case 'rotate-tsa-leaf':
      case 'rotate-tsa-root': {
        const pq = args.includes('--pq');
        if (args.some((a) => a !== '--pq')) return usageError(`${command} takes only --pq.`);
        const { rotateTsa } = await import('./tsa-rotate.js');
        const rotated = await rotateTsa(command === 'rotate-tsa-root' ? 'root' : 'leaf', pq ? 'pq' : 'classic');
        // The local PDF signing certificate is issued by the classic TSA root: a new root reissues
        // it (a rotation of the PDF signing key, recorded in the key registry), so that no PDF is
        // signed after the root's retirement under a certificate the retired root issued.
        const config = getConfig();
        const reissue = command === 'rotate-tsa-root' && !pq && !config.pdfSigner.kmsKeyId;
        // The archive job reads the history at its start: the retirement reaches it with the next npm start.
        const records = pq ? {} : { evidence_records: EVIDENCE_RECORDS_AFTER_ROTATION };
        io.out(JSON.stringify({ ...rotated, ...records, ...(reissue ? { pdf_signing: await rotateLocalKey(config, 'pdf-signing') } : {}) }, null, 2));
        return 0;
      }
      case 'record-tsa-retirement': {
        const { values, positionals } = parseArgs({ args: [...args], options: { kind: { type: 'string' }, role: { type: 'string' }, history: { type: 'string' }, at: { type: 'string' } }, allowPositionals: true, strict: true });
        const [certFile] = positionals;
        if (positionals.length !== 1 || !certFile) return usageError('record-tsa-retirement needs one certificate file.');
        if (values.kind !== 'classic' && values.kind !== 'pq') return usageError('--kind is classic or pq.');
        if (values.role !== 'leaf' && values.role !== 'root') return usageError('--role is leaf or root.');
        const { recordTsaRetirement } = await import('./tsa-rotate.js');
        const history = await recordTsaRetirement({ certFile, kind: values.kind, role: values.role, ...(values.history ? { historyFile: values.history } : {}), ...(values.at ? { at: new Date(values.at) } : {}) });
        const records = values.kind === 'classic' ? { evidence_records: values.role === 'leaf' ? EVIDENCE_RECORDS_AFTER_RECORDING : EVIDENCE_RECORDS_ROOT } : {};
        io.out(JSON.stringify({ retired: history.retired.map(({ pem: _pem, ...rest }) => rest), ...records }, null, 2));
        return 0;
      }
      case 'issue-pq-tsa-cert': {
        const { values } = parseArgs({ args: [...args], options: { 'root-cert': { type: 'string' }, 'root-key': { type: 'string' }, 'public-key': { type: 'string' }, out: { type: 'string' } }, strict: true });
        const rootCertFile = values['root-cert'];
        const rootKeyFile = values['root-key'];
        const publicKeyFile = values['public-key'];
        const outFile = values.out;
        if (!rootCertFile || !rootKeyFile || !publicKeyFile || !outFile) return usageError('issue-pq-tsa-cert needs --root-cert, --root-key, --public-key and --out.');
        const { issuePqTsaCertificateFor } = await import('./tsa-rotate.js');
        io.out(JSON.stringify(await issuePqTsaCertificateFor({ rootCertFile, rootKeyFile, publicKeyFile, outFile }), null, 2));
        return 0;
      }
      default:
        return usageError(`Unknown command "${command}".`);
    }
  } catch (error) {
    if (error instanceof UnknownAccountError) return fail(io, `No account "${error.account}".`);
    if (error instanceof ConfigError) return fail(io, error.message);
    if (error instanceof RotationRefused) return fail(io, `Not rotated: ${error.message}.`);
    if (error instanceof DomainError) return fail(io, error.detail);
    if (error instanceof Error && error.name === 'TsaRotationRefused') return fail(io, error.message);
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true) return usageError((error as Error).message);
    const message = (error instanceof Error ? error.message : String(error)).replace(/\.$/, '');
    return fail(io, `Failed: ${message}. ${whereItLooked(resolve)}`);
  }
}

/**
 * What the CLI talked to, for a failure it cannot name: it reads the configuration `npm start`
 * reads (lib/config.ts, the same variables and defaults), so a stack started on other ports is
 * reached by running the CLI with the same variables.
 */
function whereItLooked(resolve: () => AccountDeps): string {
  let config: AccountDeps['config'];
  try {
    config = resolve().config;
  } catch {
    return 'Is the local stack running (npm start), or are AWS credentials set?';
  }
  if (config.deployment === 'aws') return 'Are AWS credentials set, and DEPLOYMENT, AWS_REGION and the TABLE_* variables those of the stack?';
  return (
    `It used DynamoDB at ${config.aws.dynamoEndpoint}, the chain at ${config.ledger.rpcUrl} and DATA_DIR ${config.dataDir}. ` +
    'Is npm start running, with these same variables (DYNAMODB_PORT or DYNAMODB_ENDPOINT, LEDGER_RPC_PORT, DATA_DIR)?'
  );
}

function fail(io: CliIo, message: string): number {
  io.err(message);
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runAdmin(process.argv.slice(2));
  resetCoreDeps();
}
