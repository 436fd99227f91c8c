import { GetPublicKeyCommand, KMSClient, type KeySpec } from '@aws-sdk/client-kms';

/** Per attempt (connect, request, response) and per call with the SDK's retries. */
const KMS_ATTEMPT_TIMEOUT_MS = 3000;
const KMS_DEADLINE_MS = 8000;

/**
 * The one way the service builds a KMS client (the ML-DSA-65, Ed25519 and TSA signers, the PDF
 * signer, the wallet, the JWT secret): every call has a deadline per attempt and per call
 * (decisions.md "Faults of the parts"), so a KMS that hangs fails the request with a 503 instead of
 * holding it until the Lambda's own timeout.
 */
export function createKmsClient(region: string): KMSClient {
  const client = new KMSClient({
    region,
    maxAttempts: 3,
    requestHandler: { connectionTimeout: KMS_ATTEMPT_TIMEOUT_MS, requestTimeout: KMS_ATTEMPT_TIMEOUT_MS, throwOnRequestTimeout: true, socketTimeout: KMS_ATTEMPT_TIMEOUT_MS },
  });
  type Send = (command: unknown, options?: { abortSignal?: AbortSignal }) => Promise<unknown>;
  const send = (client.send as Send).bind(client);
  (client as { send: Send }).send = (command, options) => send(command, { ...options, abortSignal: options?.abortSignal ?? AbortSignal.timeout(KMS_DEADLINE_MS) });
  return client;
}

/**
 * The one read of a KMS signing key's public key (the ML-DSA-65 and Ed25519 signers, the wallet):
 * GetPublicKey, then the key must be of `keySpec` and for SIGN_VERIFY (when KMS says). Returns the
 * SubjectPublicKeyInfo DER for the caller to decode. A failed call names the key and the SDK error.
 */
export async function readKmsPublicKey(client: KMSClient, keyId: string, keySpec: KeySpec): Promise<Uint8Array> {
  let response;
  try {
    response = await client.send(new GetPublicKeyCommand({ KeyId: keyId }));
  } catch (err) {
    throw new Error(`KMS GetPublicKey failed for ${keyId}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
  }
  if (response.KeySpec !== undefined && response.KeySpec !== keySpec) {
    throw new Error(`KMS key ${keyId} has key spec ${response.KeySpec}, expected ${keySpec}`);
  }
  if (response.KeyUsage !== undefined && response.KeyUsage !== 'SIGN_VERIFY') {
    throw new Error(`KMS key ${keyId} has key usage ${response.KeyUsage}, expected SIGN_VERIFY`);
  }
  if (response.PublicKey === undefined) throw new Error(`KMS GetPublicKey for ${keyId} returned no public key`);
  return response.PublicKey;
}
