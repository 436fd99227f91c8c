import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { PqKeyRegistration, PqRegistrationStore } from '../evidence/ports.js';
import { tryWrite } from './conditional.js';
import { claimLease, type LeaseAttributes, leaseWrite } from './lease.js';

/**
 * The ML-DSA-65 key registrations, in the ledger table under a reserved key (pk
 * `pqkey#<fingerprint>`, sk 0: the ledger sender's items are `wallet#…` and `tx#…`, so the names
 * cannot collide), behind the domain's PqRegistrationStore port (lib/evidence/ports.ts).
 * A run claims the record under a lease (lib/store/lease.ts) before it sends anything.
 */

/** The registration as stored: the public view and the claim's lease while a run sends. */
interface RegistrationItem extends PqKeyRegistration {
  pk: string;
  sk: 0;
  claim_id?: string;
  claim_expires_at?: number;
}

/** The registration's lease: the run's claim id until claim_expires_at. */
const REGISTRATION_LEASE: LeaseAttributes = { owner: 'claim_id', expires: 'claim_expires_at' };

/** Key of the registration record of a fingerprint in the ledger table. */
function pqRegistrationKey(fingerprint: string): { pk: string; sk: 0 } {
  return { pk: `pqkey#${fingerprint}`, sk: 0 };
}

export class PqRegistrationTable implements PqRegistrationStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    /** The ledger table's name. */
    private readonly table: string,
  ) {}

  async read(fingerprint: string): Promise<PqKeyRegistration | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: pqRegistrationKey(fingerprint), ConsistentRead: true }));
    return r.Item ? publicView(r.Item as RegistrationItem) : undefined;
  }

  claim(registration: PqKeyRegistration, claimId: string, expiresAt: number, nowMs: number): Promise<boolean> {
    return claimLease(this.db, {
      table: this.table,
      item: { ...pqRegistrationKey(registration.fingerprint), ...registration },
      attributes: REGISTRATION_LEASE,
      token: claimId,
      expiresAt,
      nowMs,
      // Free when never claimed or when its transaction failed; a claim whose run died (expired
      // before a hash was recorded) is taken over; never while another run is sending.
      free: { expression: 'attribute_not_exists(pk) OR #state = :failed', names: { '#state': 'state' }, values: { ':failed': 'failed' } },
      claimed: { expression: '#state = :claimed', names: { '#state': 'state' }, values: { ':claimed': 'claimed' } },
    });
  }

  async recordSent(fingerprint: string, claimId: string, sent: { txHash: string; nonce: number; from: string; sentAt: string }): Promise<PqKeyRegistration | undefined> {
    // Only our own claim: a run that outlived its claim must not overwrite its successor's record. The claim ends here.
    const r = await leaseWrite(this.db, {
      table: this.table,
      key: pqRegistrationKey(fingerprint),
      attributes: REGISTRATION_LEASE,
      step: { holder: claimId, then: 'end' },
      set: { state: 'sent', tx_hash: sent.txHash, nonce: sent.nonce, from: sent.from, sent_at: sent.sentAt },
      returnValues: 'ALL_NEW',
    });
    return r.ok ? publicView(r.attributes as unknown as RegistrationItem) : undefined;
  }

  async recordReceipt(fingerprint: string, txHash: string, receipt: { status: 'confirmed' | 'failed'; blockNumber: number; confirmedAt: string }): Promise<void> {
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: pqRegistrationKey(fingerprint),
        UpdateExpression: 'SET #state = :s, block_number = :b, confirmed_at = :at',
        ConditionExpression: 'tx_hash = :tx',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':s': receipt.status, ':b': receipt.blockNumber, ':at': receipt.confirmedAt, ':tx': txHash },
      }),
    );
  }

  async releaseClaim(fingerprint: string, claimId: string): Promise<void> {
    // Expire the claim at once (keeping created_at) so that the next run may claim again.
    await leaseWrite(this.db, {
      table: this.table,
      key: pqRegistrationKey(fingerprint),
      attributes: REGISTRATION_LEASE,
      step: { holder: claimId, then: 'expire' },
      also: { expression: '#state = :claimed', names: { '#state': 'state' }, values: { ':claimed': 'claimed' } },
    });
  }
}

function publicView(item: RegistrationItem): PqKeyRegistration {
  const { pk: _pk, sk: _sk, claim_id: _claim, claim_expires_at: _exp, ...rest } = item;
  return rest;
}
