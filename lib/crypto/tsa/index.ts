/**
 * RFC 3161 time-stamping: the embedded TSA, the remote TSA client, verification, and the
 * certificates of the embedded TSA.
 */
export {
  type DistinguishedName,
  type GenerateTsaCertificatesOptions,
  type IssueTsaCertificateOptions,
  type LoadedTsaCertificates,
  type TsaCertificateBundle,
  assertTsaCertificates,
  certificateDer,
  certificateToPem,
  generateTsaCertificates,
  importPrivateKey,
  issueTsaCertificate,
  keyMatchesCertificate,
  loadTsaCertificates,
  parseCertificate,
  parseCertificates,
} from './certificates.js';
export {
  type EmbeddedIssuedTimestamp,
  type EmbeddedTimestampRequest,
  type EmbeddedTsaOptions,
  EmbeddedTsa,
} from './embedded.js';
export { PkiFailureInfo } from './tsa-request.js';
export { TsaUnavailableError } from './errors.js';
export { type TsaKeySigner, KmsTsaKeySigner, WebCryptoTsaKeySigner, signerMatchesCertificate } from './key-signer.js';
export { type PemBlock, derToPem, pemBlocks, pemToDer } from './pem.js';
export { type RemoteTsaOptions, RemoteTsa } from './remote.js';
export {
  type CheckOutcome,
  type CheckResult,
  type PkiStatusSummary,
  type TimestampChecks,
  type TimestampSummary,
  type TimestampVerification,
  type VerifyTimestampOptions,
  extractTimestampToken,
  parseTimestampResponse,
  parseTimestampToken,
  timestampSigner,
  verifyTimestampResponse,
  verifyTimestampToken,
} from './verify.js';
export { type HashName } from './asn1.js';
