/**
 * Sends one webhook request (docs/webhooks.md "Server-side request forgery"), with Node's own
 * http/https clients:
 * - the host is resolved by our `lookup`, which refuses the connection unless EVERY address of the
 *   answer is allowed (lib/net/address-policy.ts); an IP literal is checked before the request;
 * - the socket is checked again once connected: its remote address, the one actually used;
 * - no redirect is followed (Node's clients follow none; a 3xx is a failed attempt);
 * - one deadline for everything, resolving, connecting, TLS, the answer (15 s by default);
 * - at most `maxBytes` of the answer are read (the status is all that counts), then the socket is closed;
 * - a new connection per request (`agent: false`): no pooled socket outlives its check.
 * Never throws or rejects, not even when Node's client throws synchronously: the outcome is a
 * status (0 when no answer came) and a short reason.
 */
import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction, Socket } from 'node:net';
import { isIP } from 'node:net';
import { type Resolve, type TargetPolicy, refusedAddressClass } from './address-policy.js';

export interface SendOptions {
  policy: TargetPolicy;
  timeoutMs?: number;
  maxBytes?: number;
  /** How host names are resolved (tests give one that changes its answer, as DNS rebinding does). */
  resolve?: Resolve;
}

export interface SendOutcome {
  status: number;
  error?: string;
}

export const ATTEMPT_TIMEOUT_MS = 15_000;
export const MAX_ANSWER_BYTES = 4096;

export const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

class RefusedAddress extends Error {
  readonly code = 'EREFUSEDADDRESS';
}

/** A `lookup` for net.connect that answers only when every resolved address is allowed. */
export function guardedLookup(policy: TargetPolicy, resolve: Resolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.map((a) => [a.address, refusedAddressClass(a.address, policy)] as const).find(([, why]) => why);
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 4);
        if (refused) return callback(new RefusedAddress(`${hostname} resolves to ${refused[0]}, which is ${refused[1] ?? ''}`), '', 4);
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (options.all) return (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, wanted);
        const first = wanted[0] ?? addresses[0]!;
        return callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, '', 4),
    );
  };
}

/** POSTs `body` to `url` with `headers` under the policy; the status, or 0 and why. */
export function sendWebhook(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<SendOutcome> {
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? MAX_ANSWER_BYTES;
  const { policy } = options;
  // Refused before any connection: not a URL, not https where https is required, a refused IP literal.
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ status: 0, error: 'refused: not an absolute URL' });
  }
  const secure = target.protocol === 'https:';
  if (!secure && (target.protocol !== 'http:' || policy.requireHttps)) return Promise.resolve({ status: 0, error: 'refused: only https URLs are accepted' });
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host) ? refusedAddressClass(host, policy) : undefined;
  if (literal) return Promise.resolve({ status: 0, error: `refused: ${host} is ${literal}` });
  return new Promise<SendOutcome>((resolvePromise) => {
    let settled = false;
    const done = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolvePromise(outcome);
    };
    const client = secure ? https : http;
    let req: http.ClientRequest;
    try {
      req = client.request(target, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        lookup: guardedLookup(policy, options.resolve ?? systemResolve),
      });
    } catch (error) {
      // Node refuses some requests synchronously (a header it cannot send, an option it rejects):
      // an attempt that failed, like any other, never a rejection (the caller would leave the
      // delivery claimed, to be taken again every lease forever).
      settled = true;
      resolvePromise({ status: 0, error: `request refused (${(error as NodeJS.ErrnoException).code ?? (error as Error).name})` });
      return;
    }
    const timer = setTimeout(() => {
      done({ status: 0, error: `timeout: no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    // The connection actually used: its remote address is checked once it is connected, before a byte is sent.
    req.on('socket', (socket: Socket) => {
      const check = () => {
        const remote = socket.remoteAddress;
        const refused = remote ? refusedAddressClass(remote, policy) : 'unknown';
        if (refused) {
          done({ status: 0, error: `refused: connected to ${remote ?? '?'}, which is ${refused}` });
          req.destroy();
          socket.destroy();
        }
      };
      if (socket.remoteAddress) check();
      else socket.once('connect', check);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error instanceof RefusedAddress) done({ status: 0, error: `refused: ${error.message}` });
      else done({ status: 0, error: `connection failed (${error.code ?? error.name})` });
    });
    req.on('response', (res) => {
      let read = 0;
      const status = res.statusCode ?? 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= maxBytes) {
          done({ status });
          res.destroy();
        }
      });
      res.on('end', () => done({ status }));
      res.on('close', () => done({ status }));
      res.on('error', () => done({ status }));
    });
    req.end(body);
  });
}
