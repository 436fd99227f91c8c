import path from 'node:path';

/** Where the embedded TSA's PEM files live in its directory (DATA_DIR/tsa locally). */
export function tsaFiles(dir: string) {
  return {
    rootCert: path.join(dir, 'root.pem'),
    rootKey: path.join(dir, 'root.key.pem'),
    tsaCert: path.join(dir, 'tsa.pem'),
    tsaKey: path.join(dir, 'tsa.key.pem'),
  };
}
