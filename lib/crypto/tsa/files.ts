import path from 'node:path';

/** Where the embedded TSA's PEM files live in its directory (DATA_DIR/tsa locally). */
export function tsaFiles(dir: string) {
  return {
    rootCert: path.join(dir, 'root.pem'),
    rootKey: path.join(dir, 'root.key.pem'),
    tsaCert: path.join(dir, 'tsa.pem'),
    tsaKey: path.join(dir, 'tsa.key.pem'),
    /** The retired TSA certificates of both kinds (history.ts), written by the rotation commands. */
    history: path.join(dir, 'history.json'),
  };
}

/**
 * The post-quantum TSA's files in the same directory: its ML-DSA-65 root and leaf certificates
 * (RFC 9881) and their seeds as PKCS#8 (RFC 9881 §6 seed form, mode 0600).
 */
export function pqTsaFiles(dir: string) {
  return {
    rootCert: path.join(dir, 'pq-root.pem'),
    rootKey: path.join(dir, 'pq-root.key.pem'),
    tsaCert: path.join(dir, 'pq-tsa.pem'),
    tsaKey: path.join(dir, 'pq-tsa.key.pem'),
  };
}
