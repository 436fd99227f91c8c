/**
 * The second half of a local wallet rotation (the first: `npm run admin -- rotate-key
 * ledger-wallet`, lib/cli/rotate-key.ts, which made `ledger-wallet.key.next`), run by `npm start`
 * once the chain is up and before anything sends. The production path is docs/runbook.md
 * "Rotating keys" (Wallet); this is the same sequence with the local files:
 *
 *   pending ──old wallet drained──▶ drained ──funding persisted (a slot of the old wallet)──▶ funding
 *     ──its receipt──▶ funded ──registry: new active, old retired (atomic)──▶ retired ──rename .next → key──▶ done
 *
 * Every step is resumable after a kill at any line: the funding is found by its slot (kind
 * `wallet-funding`, ref = the new address), so it is sent once; a registry that retired the old
 * wallet already skips everything but the rename. The funding goes through the old wallet's own
 * nonce slots (persisted before its broadcast), so the local chain's replay rebuilds it like any
 * other transaction. Nothing is signed with the old key after its retirement.
 */
import { rename } from 'node:fs/promises';
import { Wallet } from 'ethers';
import { findEntry, readKeyRegistry, rotateRegistry, walletEntry, writeKeyRegistry } from '../crypto/key-windows.js';
import { localWalletFiles, readLocalWalletKey } from '../ledger/local-wallet.js';
import type { LedgerSender } from '../ledger/sender.js';
import { LIVE } from '../ledger/types.js';

export interface WalletRotationDeps {
  walletKeyFile: string;
  keyRegistryFile: string;
  /** The sender of a wallet by its private key (lib/deps/anchoring.ts ledgerSenderForKey). */
  senderFor(privateKey: string): LedgerSender;
  /** The wallet's balance in wei. */
  balanceOf(address: string): Promise<bigint>;
  /** The fee cap per gas (LEDGER_MAX_FEE_GWEI, in wei): what the transfer's own gas can cost at most. */
  maxFeePerGasWei: bigint;
  clock?: () => Date;
  receiptTimeoutMs?: number;
}

export type WalletRotationOutcome =
  | { state: 'done'; from: string; to: string; fundingTxHash: string | null; valueWei: string | null }
  | { state: 'waiting'; from: string; to: string; reason: string };

/** The gas a value transfer to an account without code is given (lib/ledger/fees.ts gasLimitFor('0x')). */
const TRANSFER_GAS = 23_100n;

/** Finishes a rotation `rotate-key ledger-wallet` began; null when none is pending. */
export async function finishWalletRotation(deps: WalletRotationDeps): Promise<WalletRotationOutcome | null> {
  const files = localWalletFiles(deps.walletKeyFile);
  const nextKey = await readLocalWalletKey(files.next);
  if (!nextKey) return null;
  const oldKey = await readLocalWalletKey(files.live);
  if (!oldKey) throw new Error(`${files.next} is there but ${files.live} is not: restore the wallet key file`);
  const from = new Wallet(oldKey).address;
  const to = new Wallet(nextKey).address;
  if (from === to) throw new Error(`${files.next} holds the wallet already in use: remove it`);

  const registry = await readKeyRegistry(deps.keyRegistryFile);
  let fundingTxHash: string | null = null;
  let valueWei: string | null = null;
  if (!findEntry(registry, 'ledger-wallet', from)?.retired_at) {
    const sender = deps.senderFor(oldKey);
    const timeout = deps.receiptTimeoutMs ?? 60_000;
    // drained: every persisted transaction of the old wallet final (its nonces, replacements and
    // re-sends are its own; nobody would finish them after the switch).
    await sender.replay({ receiptTimeoutMs: timeout });
    const slots = await sender.listSlots(0);
    const unfinished = slots.filter((s) => (s.status === 'signed' || s.status === 'sent') && !(s.kind === 'wallet-funding' && s.ref === to.toLowerCase()));
    if (unfinished.length > 0) {
      return { state: 'waiting', from, to, reason: `${unfinished.length} transaction(s) of the old wallet are not final yet; the next start tries again` };
    }
    // funding: found by its slot, or sent now (persisted before its broadcast, like every transaction).
    let funding = slots.find((s) => s.kind === 'wallet-funding' && s.ref === to.toLowerCase() && LIVE.has(s.status));
    if (!funding) {
      const value = (await deps.balanceOf(from)) - TRANSFER_GAS * deps.maxFeePerGasWei;
      if (value <= 0n) return { state: 'waiting', from, to, reason: `the old wallet ${from} has nothing left to fund the new one with: fund ${to} yourself, then start again` };
      const sent = await sender.submit('0x', { kind: 'wallet-funding', ref: to.toLowerCase() }, { transfer: { to, valueWei: value } });
      funding = (await sender.listSlots(sent.nonce)).find((s) => s.sk === sent.nonce);
      valueWei = value.toString();
    }
    if (!funding) throw new Error('the funding transaction was sent but its slot cannot be read; start again');
    fundingTxHash = funding.tx_hash;
    const receipt = funding.status === 'confirmed' ? { status: 'confirmed' } : await sender.waitForReceipt(funding.tx_hash, timeout, funding.sk);
    if (!receipt) return { state: 'waiting', from, to, reason: `the funding transaction ${funding.tx_hash} is not mined yet; the next start waits for it again` };
    if (receipt.status !== 'confirmed') throw new Error(`the funding transaction ${funding.tx_hash} failed on the chain`);

    // retired: the new wallet active from now, the old one retired at the same instant (one atomic write).
    const at = (deps.clock ?? (() => new Date()))();
    const known = findEntry(registry, 'ledger-wallet', from);
    const updated = rotateRegistry(registry, walletEntry(to), at, known ?? { ...walletEntry(from), not_before: null, retired_at: null });
    if (updated !== registry) await writeKeyRegistry(deps.keyRegistryFile, updated);
  }
  // done: the stack loads the new key from here on.
  await rename(files.next, files.live);
  return { state: 'done', from, to, fundingTxHash, valueWei };
}
