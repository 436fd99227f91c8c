import path from 'node:path';

/** Where the local PDF signing key and its certificate live (DATA_DIR/pdf-signer). */
export function pdfSignerFiles(dir: string) {
  return {
    cert: path.join(dir, 'cert.pem'),
    key: path.join(dir, 'key.pem'),
  };
}
