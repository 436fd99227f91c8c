/**
 * Request and response schemas of the Starter features (decisions.md "Starter features"): the
 * stand-alone timestamp, the RFC 3161 HTTP endpoint, the Ed25519 signature, the JWK set and the
 * trust-anchor document. The same schemas validate and document (OpenAPI).
 */
import { z } from '@hono/zod-openapi';
import { DEFAULT_TSA_POLICY_OID, DEFAULT_TSA_PQ_POLICY_OID } from '../../config.js';
import { IsoTime, Sha256Hex } from './common.js';

export const TimestampHashRequest = z
  .strictObject({
    sha256_hash: Sha256Hex,
    policy: z
      .string()
      .max(200)
      .regex(/^[0-2](\.\d+)+$/, 'must be a dotted OID, e.g. 2.25.240188381855450738062415899808185980756')
      .optional()
      .openapi({
        description:
          'The TSA policy OID, as the reqPolicy of an RFC 3161 request: it chooses the time-stamping authority. Absent, or the classic policy (TSA_POLICY_OID, default ' +
          `${DEFAULT_TSA_POLICY_OID}): an ECDSA P-256 token. The post-quantum policy (TSA_PQ_POLICY_OID, default ${DEFAULT_TSA_PQ_POLICY_OID}; \`tsa.pq.policy_oid\` of /.well-known/evidence-trust-anchors.json): ` +
          'an ML-DSA-65 token (RFC 9882 CMS, digest SHA-512). Any other policy, or the post-quantum one while this service\'s post-quantum TSA is off: 400 `unaccepted_policy`.',
        example: DEFAULT_TSA_PQ_POLICY_OID,
      }),
  })
  .openapi('TimestampHashRequest');

export const TimestampHashResponse = z
  .object({
    sha256_hash: z.string(),
    timestamp_token: z.string().openapi({
      description:
        'The RFC 3161 TimeStampResp (§2.4.2), DER, base64, with the TSA certificates in the token. Its message imprint is SHA-256 = sha256_hash, so `openssl ts -verify -data <file> -in token.tsr -CAfile root.pem` checks it against the file itself (an ML-DSA-65 token: OpenSSL 3.5 or later).',
    }),
    gen_time: IsoTime.describe('genTime of the token.'),
    serial_number: z.string().openapi({ description: 'serialNumber of the token (decimal).' }),
    policy: z.string().openapi({ description: 'The TSA policy OID of the token: the classic one (ECDSA P-256) or the post-quantum one (ML-DSA-65), as the request chose.' }),
    tsa_certificates: z.array(z.string()).openapi({
      description:
        'The chain of the TSA that signed, as PEM, leaf first, root last (also at GET /api/v2/tsa/certificates, with `?policy=<oid>` for the post-quantum one). Pin the root you got from us once, not this copy.',
    }),
  })
  .openapi('TimestampHashResponse');

const HexKey = z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal characters (a 32-byte Ed25519 public key)');
const HexSignature = z.string().regex(/^[0-9a-fA-F]{128}$/, 'must be 128 hexadecimal characters (a 64-byte Ed25519 signature)');

export const SignRequest = z
  .strictObject({
    sha256_hash: Sha256Hex,
    public_key_hex: HexKey.optional().openapi({ description: "The device's Ed25519 public key (with signature_hex)." }),
    signature_hex: HexSignature.optional().openapi({ description: "The device's Ed25519 signature over the 32 raw bytes of sha256_hash (or over its 64-character hex string), as for anchors." }),
  })
  .openapi('SignRequest');

export const SignatureStatementSchema = z
  .object({
    statement_type: z.literal('evidence-signature-v1'),
    sha256_hash: z.string(),
    hash_algorithm: z.literal('SHA-256'),
    signed_at: IsoTime,
    algorithm: z.literal('Ed25519'),
    key_id: z.string(),
    issuer: z.string().openapi({ description: 'The signing service (its PUBLIC_BASE_URL); its JWK set is at {issuer}/.well-known/jwks.json.' }),
    device: z.object({ public_key_hex: z.string(), signature_hex: z.string() }).optional().openapi({ description: "Only when the request carried the device's key and signature (verified before signing)." }),
  })
  .openapi('SignatureStatement');

export const SignResponse = z
  .object({
    algorithm: z.literal('Ed25519'),
    key_id: z.string().openapi({ description: 'The kid of the signing key in GET /.well-known/jwks.json.', example: 'ed25519:3f1c0a9d2b7e4c51' }),
    statement: SignatureStatementSchema,
    signature: z.string().openapi({ description: 'Ed25519 (RFC 8032, pure) over the UTF-8 bytes of the RFC 8785 canonical form of `statement`, base64url (64 bytes).' }),
  })
  .openapi('SignResponse');

/**
 * A key's validity window (docs/decisions.md "Key validity windows"): a signature made at t by the
 * key verifies when not_before ≤ t ≤ not_after and t < retired_at (each only when set).
 */
const windowTime = (what: string) => IsoTime.nullable().openapi({ description: what });
export const validityWindowFields = {
  not_before: windowTime('First instant the key may sign (X.509: notBefore); null: not recorded (a key from before the key registry).'),
  not_after: windowTime('Last instant the key may sign (X.509: notAfter); null for raw keys and wallets.'),
  retired_at: windowTime('When a rotation took the key out of service; null while it signs. A signature dated at or after it fails.'),
};

const Jwk = z
  .object({
    kty: z.enum(['OKP', 'AKP']),
    crv: z.literal('Ed25519').optional(),
    alg: z.enum(['Ed25519', 'ML-DSA-65']),
    use: z.literal('sig'),
    key_ops: z.array(z.literal('verify')),
    kid: z.string(),
    x: z.string().optional().openapi({ description: 'OKP (RFC 8037): the raw 32-byte Ed25519 public key, base64url.' }),
    pub: z.string().optional().openapi({ description: 'AKP (draft-ietf-cose-dilithium): the raw 1952-byte ML-DSA-65 public key, base64url.' }),
    status: z.enum(['active', 'retired']).openapi({ description: '`active`: signs now. `retired`: no longer signs; kept so that earlier statements and receipts still verify.' }),
    ...validityWindowFields,
  })
  .openapi('Jwk');

export const JwkSet = z.object({ keys: z.array(Jwk) }).openapi('JwkSet');

export const TrustAnchorsSchema = z
  .object({
    service: z.string(),
    base_url: z.string(),
    tsa: z.object({
      root_pem: z.string().openapi({ description: 'The TSA root certificate: the CAfile of `openssl ts -verify`.' }),
      root_sha256: z.string().openapi({ description: 'SHA-256 of the root certificate (DER), hex: compare it with what the operator tells you.' }),
      certificates_url: z.string(),
      policy_oid: z.string(),
      pq: z
        .object({
          root_pem: z.string().openapi({ description: 'The post-quantum TSA root (ML-DSA-65, RFC 9881): the CAfile for the ML-DSA-65 tokens (`timestamp_pq` of a receipt; OpenSSL 3.5 or later on the command line).' }),
          root_sha256: z.string(),
          certificates_url: z.string(),
          policy_oid: z.string().openapi({ description: 'The reqPolicy that asks POST /api/v2/tsa for an ML-DSA-65 token.' }),
        })
        .optional()
        .openapi({ description: 'The post-quantum TSA (RFC 9882), when it is on.' }),
      certificates: z
        .array(
          z.object({
            kind: z.enum(['classic', 'pq']),
            role: z.enum(['root', 'leaf']),
            status: z.enum(['active', 'retired']),
            sha256: z.string().openapi({ description: 'SHA-256 of the certificate (DER), hex.' }),
            subject: z.string(),
            not_before: z.string(),
            not_after: z.string(),
            retired_at: z.string().nullable().openapi({ type: ['string', 'null'], description: 'When it stopped signing (a key rotation); a token dated after it fails. null: current.' }),
            pem: z.string(),
          }),
        )
        .openapi({
          description:
            'Every TSA certificate of the service, current and retired, with its validity window. A token is judged as of its genTime: its certificates must have been valid then and not retired before it. Retired roots remain trust anchors for the tokens dated before their retirement.',
        }),
    }),
    jwks_url: z.string(),
    signing_keys: z.array(
      z.object({
        kid: z.string(),
        alg: z.string(),
        status: z.string(),
        sha256: z.string().openapi({ description: 'SHA-256 of the raw public key (for ML-DSA-65: what `evidence verify --pq-key` pins).' }),
        ...validityWindowFields,
      }),
    ),
    pdf_signing: z
      .array(
        z.object({
          status: z.enum(['active', 'retired']),
          certificate_pem: z.string().openapi({ description: 'The PDF signing certificate (PAdES), issued under the TSA root.' }),
          sha256: z.string().openapi({ description: 'SHA-256 of the certificate (DER), hex.' }),
          ...validityWindowFields,
        }),
      )
      .openapi({ description: 'The PDF signing certificates, current and retired, each with its validity window (the certificate\'s notBefore/notAfter and the retirement).' }),
    ledger: z.object({
      network: z.string(),
      chain_id: z.number().int(),
      wallet_address: z.string().openapi({ description: 'The address that sends anchoring transactions now (`evidence verify --wallet`).' }),
      wallets: z
        .array(z.object({ address: z.string(), status: z.enum(['active', 'retired']), ...validityWindowFields }))
        .openapi({ description: 'Every address that sent or sends anchoring transactions, each with its window: a transaction verifies when its block time is within the window of its sender.' }),
    }),
    c2pa: z
      .object({
        tsa_url: z.string().openapi({ description: 'The RFC 3161 URL a C2PA signer points its time authority at (`POST /api/v2/tsa`; the API key as the password of HTTP Basic, e.g. in the URL\'s user-info).' }),
        tsa_anchor: z
          .object({ trust_kind: z.literal('tsa'), trust_anchors: z.string().openapi({ description: 'The classic (ECDSA) TSA roots, current and retired, as one PEM text.' }) })
          .openapi({ description: 'The entry a C2PA 2.1 reader adds to its trust list so that it trusts our time-stamps (`timeStamp.trusted`). The older `trust_anchors` and `user_anchors` settings do not cover time-stamps.' }),
        reader_context: z
          .object({ trust: z.object({ anchors: z.array(z.object({ trust_kind: z.literal('tsa'), trust_anchors: z.string() })) }) })
          .openapi({
            description:
              'A context for the official C2PA reader (c2pa-rs: `Context`, `@contentauth/c2pa-wasm`: `WasmReader.fromBytes(format, bytes, JSON.stringify(context))`) that trusts our time-stamps. Add `{"trust_kind": "manifest", "trust_anchors": "<PEM>"}` with the signing roots you trust to `trust.anchors`.',
          }),
      })
      .openapi({ description: 'C2PA Content Credentials (docs/c2pa.md): what a reader needs to trust the time-stamps of our TSA in a manifest\'s signature (`sigTst2`). The ECDSA TSA only: C2PA readers have no ML-DSA.' }),
  })
  .openapi('TrustAnchors');
