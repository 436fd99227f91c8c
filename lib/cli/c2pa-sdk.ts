/**
 * The official C2PA SDK in this process: `@contentauth/c2pa-wasm` (c2pa-rs compiled to
 * WebAssembly), the builder that embeds a manifest and the reader that judges one. We sign with
 * its builder and read with its reader, so that what `evidence` writes and what it reports are
 * what any Content Credentials reader sees; our own code makes only the COSE signature
 * (lib/crypto/c2pa/).
 *
 * It is loaded on first use (9 MB of WebAssembly, compiled once per process) and only by the
 * commands that need it: no Lambda imports it, and it is a development dependency, installed by
 * `npm install` in a clone like the rest of the CLI's tools.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { C2paCallbackSigner } from '../crypto/c2pa/claim-signer.js';
import { CliError } from './client.js';

type Sdk = typeof import('@contentauth/c2pa-wasm');

/** The version of the SDK package, for the reports. */
export const C2PA_SDK = '@contentauth/c2pa-wasm 0.15.0 (c2pa-rs 0.92)';

let loading: Promise<Sdk> | undefined;

/** The SDK, initialised (once per process). */
export function c2paSdk(): Promise<Sdk> {
  loading ??= (async () => {
    let sdk: Sdk;
    let wasm: Buffer;
    try {
      sdk = await import('@contentauth/c2pa-wasm');
      wasm = await readFile(createRequire(import.meta.url).resolve('@contentauth/c2pa-wasm/c2pa.wasm'));
    } catch {
      throw new CliError('Content Credentials need the C2PA SDK, @contentauth/c2pa-wasm: run "npm install" in the clone.');
    }
    installFileReaderSync();
    sdk.initSync({ module: new WebAssembly.Module(new Uint8Array(wasm)) });
    return sdk;
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}

/**
 * A Blob whose bytes are at hand synchronously. The builder reads the asset through
 * `FileReaderSync` (a browser worker's API), which Node lacks; Node's Blob can only be read
 * asynchronously, so the stand-in below reads these blobs, and their slices, from their bytes.
 */
class BytesBlob extends Blob {
  constructor(readonly content: Uint8Array) {
    super([content.slice()]);
  }
  override slice(start?: number, end?: number): BytesBlob {
    return new BytesBlob(this.content.subarray(start, end));
  }
}

/** The one method of FileReaderSync the builder calls, for the blobs above. */
function installFileReaderSync(): void {
  const global = globalThis as { FileReaderSync?: unknown };
  if (global.FileReaderSync !== undefined) return;
  global.FileReaderSync = class {
    readAsArrayBuffer(blob: Blob): ArrayBuffer {
      if (!(blob instanceof BytesBlob)) throw new TypeError('FileReaderSync stand-in: only blobs made by lib/cli/c2pa-sdk.ts can be read synchronously');
      return blob.content.slice().buffer;
    }
  };
}

/** What the manifest says of the photo: made by a camera (C2PA 2.1 §18.12, the IPTC digital source type). */
const CAPTURE = 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture';

/**
 * Embeds a C2PA manifest into a JPEG with the official builder: claim version 2, one
 * `c2pa.actions` assertion whose first action is `c2pa.created` (C2PA 2.1 §18.12.2), signed by
 * `signer`. Returns the signed JPEG.
 */
export async function signJpeg(jpeg: Uint8Array, signer: C2paCallbackSigner, options: { title: string; generator: { name: string; version: string } }): Promise<Uint8Array> {
  const sdk = await c2paSdk();
  const manifest = {
    claim_version: 2,
    claim_generator_info: [options.generator],
    title: options.title,
    format: 'image/jpeg',
    assertions: [{ label: 'c2pa.actions', data: { actions: [{ action: 'c2pa.created', digitalSourceType: CAPTURE }] } }],
  };
  const builder = sdk.WasmBuilder.fromJson(JSON.stringify(manifest));
  try {
    return await builder.sign(signer as Parameters<typeof builder.sign>[0], [], 'image/jpeg', new BytesBlob(jpeg));
  } finally {
    builder.free();
  }
}

/**
 * The reader's context that trusts the given roots (PEM texts), claim signers and time-stamping
 * authorities each by their own list (C2PA 2.1 §14.4: a validator keeps separate trust lists;
 * the older `trust_anchors` and `user_anchors` settings do not cover time-stamps).
 */
export function readerContext(anchors: { manifest: readonly string[]; tsa: readonly string[] }): string {
  const list = [
    ...(anchors.manifest.length > 0 ? [{ trust_kind: 'manifest', trust_anchors: anchors.manifest.join('') }] : []),
    ...(anchors.tsa.length > 0 ? [{ trust_kind: 'tsa', trust_anchors: anchors.tsa.join('') }] : []),
  ];
  return JSON.stringify({ trust: { anchors: list } });
}

/** The reader's verdict on a JPEG: its manifest store as JSON (`validation_state`, `validation_results`, `manifests`). */
export async function readJpeg(jpeg: Uint8Array, context: string): Promise<ManifestStore> {
  const sdk = await c2paSdk();
  const reader = await sdk.WasmReader.fromBytes('image/jpeg', jpeg, context);
  try {
    return JSON.parse(reader.json()) as ManifestStore;
  } finally {
    reader.free();
  }
}

export interface ValidationStatus {
  code: string;
  explanation?: string;
  url?: string;
}

/** The parts of the reader's JSON we show (c2pa-rs `Reader::json`). */
export interface ManifestStore {
  active_manifest?: string;
  validation_state?: 'Invalid' | 'Valid' | 'Trusted';
  validation_results?: { activeManifest?: { success?: ValidationStatus[]; informational?: ValidationStatus[]; failure?: ValidationStatus[] } };
  manifests?: Record<string, { title?: string; claim_generator_info?: { name?: string; version?: string }[]; signature_info?: { alg?: string; issuer?: string; common_name?: string; time?: string; cert_serial_number?: string } }>;
}
