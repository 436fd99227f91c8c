/**
 * The ledger adapter. Verification code should import './anchor-data.js', './rpc-reader.js' and
 * './errors.js' directly: this index also loads ethers (through the sender and the local wallet).
 */
export * from './errors.js';
export * from './anchor-data.js';
export * from './rpc-reader.js';
export * from './sender.js';
export * from './local-wallet.js';
