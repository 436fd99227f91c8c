import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashing with scrypt (RFC 7914) from node:crypto.
 *
 * Stored format, self-describing so that a later cost increase still verifies old hashes
 * (the PHC string format): `$scrypt$ln=15,r=8,p=1$<salt, base64>$<key, base64>` with a 16-byte
 * random salt per password and a 32-byte derived key.
 */

/** scrypt cost: N = 2^log2N, block size r, parallelism p. */
export interface ScryptCost {
  log2N: number;
  r: number;
  p: number;
}

/** What production uses: N = 2^15, r = 8, p = 1 (~90 ms and 32 MiB per hash on the reference machine). */
export const PRODUCTION_SCRYPT_COST: ScryptCost = Object.freeze({ log2N: 15, r: 8, p: 1 });

/** Minimum password length (decisions.md "Accounts"). */
export const MIN_PASSWORD_LENGTH = 12;

const SALT_BYTES = 16;
const KEY_BYTES = 32;
const FORMAT = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

/** Hashes and verifies passwords; one instance per cost. */
export interface PasswordHasher {
  /** A new stored hash of `password` with a fresh salt. */
  hash(password: string): Promise<string>;
  /** True when `password` matches `stored`; false for a wrong password or a stored value it cannot read. */
  verify(password: string, stored: string): Promise<boolean>;
  /**
   * A stored hash, with this hasher's cost, that no password is known to match. Login verifies
   * the password against it when the e-mail is unknown, so that both failures cost one scrypt
   * and take about as long (no account enumeration by timing).
   */
  readonly dummyHash: string;
}

/** A scrypt hasher with the given cost (tests that need many hashes pass a lower one). */
export function createScryptHasher(cost: ScryptCost = PRODUCTION_SCRYPT_COST): PasswordHasher {
  checkCost(cost);
  return {
    async hash(password) {
      const salt = randomBytes(SALT_BYTES);
      const key = await derive(password, salt, cost);
      return encode(cost, salt, key);
    },
    async verify(password, stored) {
      const parsed = decode(stored);
      if (!parsed) return false;
      const key = await derive(password, parsed.salt, parsed.cost);
      // Constant-time comparison: the time taken does not depend on how many bytes match.
      return key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
    },
    dummyHash: encode(cost, randomBytes(SALT_BYTES), randomBytes(KEY_BYTES)),
  };
}

function encode(cost: ScryptCost, salt: Buffer, key: Buffer): string {
  return `$scrypt$ln=${cost.log2N},r=${cost.r},p=${cost.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

function decode(stored: string): { cost: ScryptCost; salt: Buffer; key: Buffer } | undefined {
  const m = FORMAT.exec(stored);
  if (!m) return undefined;
  const cost = { log2N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  try {
    checkCost(cost);
  } catch {
    return undefined;
  }
  return { cost, salt: Buffer.from(m[4] ?? '', 'base64'), key: Buffer.from(m[5] ?? '', 'base64') };
}

/**
 * Bounds on the cost, also applied to values read back from the database, so that a corrupt or
 * tampered stored hash cannot make a login allocate gigabytes.
 */
function checkCost(cost: ScryptCost): void {
  const ok =
    Number.isInteger(cost.log2N) && cost.log2N >= 1 && cost.log2N <= 20 &&
    Number.isInteger(cost.r) && cost.r >= 1 && cost.r <= 32 &&
    Number.isInteger(cost.p) && cost.p >= 1 && cost.p <= 16;
  if (!ok) throw new RangeError(`unsupported scrypt cost ln=${cost.log2N},r=${cost.r},p=${cost.p}`);
}

function derive(password: string, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  const N = 2 ** cost.log2N;
  // scrypt needs 128·N·r bytes; node's default limit (32 MiB) is exactly what N = 2^15, r = 8 needs
  // and refuses it, so the limit is set to twice the need.
  const maxmem = 2 * 128 * N * cost.r * cost.p + 1024 * 1024;
  // NFC so that the same password typed as composed or decomposed Unicode hashes alike.
  const input = Buffer.from(password.normalize('NFC'), 'utf8');
  return new Promise((resolve, reject) => {
    scrypt(input, salt, KEY_BYTES, { N, r: cost.r, p: cost.p, maxmem }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}
