import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got: its headers and body, and whether `standardwebhooks` verified it with the endpoint's secret. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  verified: boolean;
  payload: { type: string; timestamp: string; data: Record<string, unknown> } | undefined;
}

/**
 * A webhook receiver as a user writes it: a plain Node HTTP server that verifies every request
 * with the `standardwebhooks` package, unchanged. `answer` decides the status of each request
 * (by its number, from 1) and may hold it (a slow receiver).
 */
export class Receiver {
  readonly received: Received[] = [];
  secret = '';
  private server: Server | undefined;
  constructor(private answer: (n: number, r: Received) => number | Promise<number> = () => 200) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let payload: Received['payload'];
        let verified = false;
        try {
          payload = new Webhook(this.secret).verify(body, {
            'webhook-id': String(req.headers['webhook-id']),
            'webhook-timestamp': String(req.headers['webhook-timestamp']),
            'webhook-signature': String(req.headers['webhook-signature']),
          }) as Received['payload'];
          verified = true;
        } catch {
          verified = false;
        }
        const r: Received = { headers: req.headers, body, verified, payload };
        this.received.push(r);
        void Promise.resolve(this.answer(this.received.length, r)).then((status) => {
          res.writeHead(status, { 'content-type': 'text/plain' });
          res.end('ok');
        });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  setAnswer(answer: (n: number, r: Received) => number | Promise<number>): void {
    this.answer = answer;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
