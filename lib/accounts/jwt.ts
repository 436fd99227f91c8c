import { SignJWT, jwtVerify } from 'jose';
import { type Clock, systemClock } from './clock.js';
import { JwtSecretError, MIN_JWT_SECRET_BYTES } from './jwt-secret.js';

/** Claims settings of the account-management JWT (decisions.md "Accounts"). */
export interface TokenSettings {
  issuer: string;
  audience: string;
  ttlSeconds: number;
}

/** What login and register return. */
export interface IssuedToken {
  token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** A token that is missing, malformed, wrongly signed, expired or meant for another issuer or audience. */
export class InvalidTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTokenError';
  }
}

const ALGORITHM = 'HS256';

/**
 * How far a token's `iat` may lie ahead of this server's clock (seconds): the clocks of the
 * Lambdas that issue and verify tokens may differ a little, never by minutes.
 */
export const MAX_CLOCK_SKEW_SECONDS = 60;

/**
 * Issues and verifies the account-management JWT: HS256 only, with `iss`, `aud`, `sub` (the
 * account id), `iat` and `exp`. The algorithm is pinned on verification, so `alg: none`,
 * HS384/HS512 and asymmetric tokens (the RS256/HS256 confusion) are rejected whatever their header says.
 */
export class TokenService {
  constructor(
    private readonly secret: () => Promise<Uint8Array>,
    private readonly settings: TokenSettings,
    private readonly clock: Clock = systemClock,
  ) {}

  /** A token for `accountId`, valid for `ttlSeconds` from now. */
  async issue(accountId: string): Promise<IssuedToken> {
    const key = await this.key();
    const now = Math.floor(this.clock().getTime() / 1000);
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setIssuer(this.settings.issuer)
      .setAudience(this.settings.audience)
      .setSubject(accountId)
      .setIssuedAt(now)
      .setExpirationTime(now + this.settings.ttlSeconds)
      .sign(key);
    return { token, token_type: 'Bearer', expires_in: this.settings.ttlSeconds };
  }

  /** The account id (`sub`) of a valid token; throws {@link InvalidTokenError} otherwise. */
  async verify(token: string): Promise<string> {
    const key = await this.key();
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: [ALGORITHM],
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        requiredClaims: ['sub', 'iat', 'exp'],
        currentDate: this.clock(),
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') throw new InvalidTokenError('the token has no subject');
      // jose checks that iat is a number, not when it lies: a token "issued" in the future, or one
      // living longer than this service ever issues, was not made by this service's issue()
      // (a leaked secret, a forged clock): refuse both.
      const iat = payload.iat as number;
      const now = Math.floor(this.clock().getTime() / 1000);
      if (iat > now + MAX_CLOCK_SKEW_SECONDS) throw new InvalidTokenError('the token was issued in the future');
      if ((payload.exp as number) - iat > this.settings.ttlSeconds) throw new InvalidTokenError('the token lives longer than the configured lifetime');
      return payload.sub;
    } catch (error) {
      if (error instanceof InvalidTokenError) throw error;
      // jose's error codes (ERR_JWT_EXPIRED, ERR_JWS_SIGNATURE_VERIFICATION_FAILED, …) stay in the
      // logs' reach through the message; the client gets one generic 401.
      throw new InvalidTokenError(error instanceof Error ? error.message : 'invalid token');
    }
  }

  private async key(): Promise<Uint8Array> {
    const key = await this.secret();
    // Checked here too, not only at load: a TokenService built around any secret source stays safe.
    if (key.length < MIN_JWT_SECRET_BYTES) throw new JwtSecretError(`the JWT secret must have at least ${MIN_JWT_SECRET_BYTES} bytes`);
    return key;
  }
}
