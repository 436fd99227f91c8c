import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { MiddlewareHandler } from 'hono';

/** Bodies smaller than this are sent as they are: compressing them saves less than the headers cost. */
export const COMPRESS_THRESHOLD_BYTES = 1024;

const COMPRESSIBLE = /^(?:text\/|application\/(?:json|problem\+json|xml|javascript|pem-certificate-chain)|image\/svg\+xml)/i;

/**
 * The encoding to answer with for an Accept-Encoding header (RFC 9110 §12.5.3): br or gzip,
 * whichever the client weights higher (br on a tie: it is smaller for JSON), or none.
 */
export function chooseEncoding(acceptEncoding: string | undefined): 'br' | 'gzip' | undefined {
  if (!acceptEncoding) return undefined;
  const q: Record<string, number> = {};
  for (const part of acceptEncoding.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = qp ? Number(qp.slice(2)) : 1;
    q[name] = Number.isFinite(value) ? value : 0;
  }
  const weight = (enc: string) => q[enc] ?? q['*'] ?? 0;
  const br = weight('br');
  const gzip = weight('gzip');
  if (br <= 0 && gzip <= 0) return undefined;
  return br >= gzip ? 'br' : 'gzip';
}

/**
 * Compresses text bodies of at least 1 KiB with br or gzip, as the client accepts (the OpenAPI
 * document shrinks from ~230 KB to a tenth). Written on node:zlib because Hono's `compress`
 * middleware offers gzip and deflate only. Buffers the body, which every answer of this API is
 * small enough for; `hono/aws-lambda` sends an encoded body base64, as API Gateway needs it.
 */
export function compressBody(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const res = c.res;
    c.header('Vary', 'Accept-Encoding', { append: true });
    if (c.req.method === 'HEAD' || !res.body || res.headers.has('Content-Encoding')) return;
    if (!COMPRESSIBLE.test(res.headers.get('Content-Type') ?? '')) return;
    if (/(?:^|,)\s*no-transform\s*(?:,|$)/i.test(res.headers.get('Cache-Control') ?? '')) return;
    const encoding = chooseEncoding(c.req.header('Accept-Encoding'));
    if (!encoding) return;
    const raw = new Uint8Array(await res.arrayBuffer());
    const headers = new Headers(res.headers);
    if (raw.byteLength < COMPRESS_THRESHOLD_BYTES) {
      c.res = new Response(raw, { status: res.status, headers });
      return;
    }
    const body =
      encoding === 'br'
        ? brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: raw.byteLength } })
        : gzipSync(raw, { level: 6 });
    headers.set('Content-Encoding', encoding);
    headers.set('Content-Length', String(body.byteLength));
    c.res = new Response(body, { status: res.status, headers });
  };
}
