/**
 * liboqs' ML-DSA-65 alone, for lib/crypto/ml-dsa.ts to import lazily. A dynamic import() of the
 * package itself would make esbuild bundle every algorithm its entry exports (~200 KB of
 * wrappers); through this module the bundle keeps ML-DSA-65 only. Unbundled (tsx), processes
 * that never sign (the CLI, verify) never load liboqs (~0.3 s of module loading).
 */
export { createMLDSA65 } from '@oqs/liboqs-js/sig';
