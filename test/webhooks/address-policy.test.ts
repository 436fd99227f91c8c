/**
 * The server-side request forgery defences (docs/webhooks.md "Server-side request forgery"):
 * every refused address class, at subscription and at connect time on the connection actually
 * used (a resolver that changes its answer, as DNS rebinding does), against a real receiver.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { refusedAddressClass, refusedTarget, type Resolve } from '../../lib/net/address-policy.js';
import { sendWebhook } from '../../lib/net/webhook-http.js';

const deployed = { allowLoopback: false, requireHttps: true };
const local = { allowLoopback: true, requireHttps: false };

describe('webhook target policy', () => {
  it('refuses every non-public class, IPv4-mapped forms included, and accepts public unicast', () => {
    const refused: [string, string][] = [
      ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['::1', 'loopback'],
      ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
      ['169.254.169.254', 'link-local'], ['169.254.0.1', 'link-local'], ['fe80::1', 'link-local'], ['febf::1', 'link-local'],
      ['100.64.0.1', 'carrier-grade NAT'], ['100.127.255.254', 'carrier-grade NAT'],
      ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'], ['ff02::1', 'multicast'],
      ['0.0.0.0', 'unspecified'], ['::', 'unspecified'],
      ['fc00::1', 'unique local'], ['fd12:3456::1', 'unique local'],
      ['::ffff:127.0.0.1', 'loopback (IPv4-mapped)'], ['::ffff:10.0.0.1', 'private (IPv4-mapped)'],
      ['::ffff:169.254.169.254', 'link-local (IPv4-mapped)'], ['::ffff:a9fe:a9fe', 'link-local (IPv4-mapped)'],
      ['::ffff:100.64.0.1', 'carrier-grade NAT (IPv4-mapped)'], ['::ffff:0.0.0.0', 'unspecified (IPv4-mapped)'],
      ['::127.0.0.1', 'IPv4 translation'], ['64:ff9b::a00:1', 'IPv4 translation'], ['2002:a00:1::1', 'IPv4 translation'],
      ['255.255.255.255', 'reserved'], ['192.0.2.1', 'reserved'],
    ];
    for (const [address, why] of refused) assert.equal(refusedAddressClass(address, deployed), why, address);
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '100.128.0.1', '172.32.0.1']) assert.equal(refusedAddressClass(address, deployed), undefined, address);
    // `npm start` allows loopback, and nothing else private.
    assert.equal(refusedAddressClass('127.0.0.1', local), undefined);
    assert.equal(refusedAddressClass('::ffff:127.0.0.1', local), undefined);
    assert.equal(refusedAddressClass('10.0.0.1', local), 'private');
  });

  it('refuses a URL at subscription: http in a deployed stage, credentials, a host with any refused address', async () => {
    const resolve: Resolve = async (host) => (host === 'mixed.example' ? [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.7', family: 4 }] : [{ address: '93.184.216.34', family: 4 }]);
    assert.match(String(await refusedTarget('http://public.example/x', deployed, resolve)), /only https/);
    assert.equal(await refusedTarget('https://public.example/x', deployed, resolve), undefined);
    assert.match(String(await refusedTarget('https://mixed.example/x', deployed, resolve)), /10\.0\.0\.7, which is private/);
    assert.match(String(await refusedTarget('https://[::ffff:169.254.169.254]/', deployed, resolve)), /link-local/);
    assert.match(String(await refusedTarget('https://u:p@public.example/', deployed, resolve)), /credentials/);
    assert.match(String(await refusedTarget('https://nowhere.example/', deployed, async () => { throw new Error('ENOTFOUND'); })), /does not resolve/);
  });
});

describe('webhook sender', () => {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    if (req.url === '/redirect') res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    else if (req.url === '/big') res.writeHead(200).end('x'.repeat(1_000_000));
    else res.writeHead(204).end();
  });
  const ready = new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`127.0.0.1:${(server.address() as AddressInfo).port}`)));
  after(() => server.close());

  it('checks the address again at connect time: a host that resolved to a public address before and to loopback now is never reached (DNS rebinding)', async () => {
    const hostPort = await ready;
    const port = hostPort.split(':')[1];
    let calls = 0;
    // First answer public (the subscription's check passes), then the attacker's rebinding to loopback.
    const rebinding: Resolve = async () => (++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    assert.equal(await refusedTarget(`http://rebind.example:${port}/`, { allowLoopback: false, requireHttps: false }, rebinding), undefined);
    const before = hits;
    const outcome = await sendWebhook(`http://rebind.example:${port}/`, {}, '{}', { policy: { allowLoopback: false, requireHttps: false }, resolve: rebinding });
    assert.equal(outcome.status, 0);
    assert.match(String(outcome.error), /refused: .*127\.0\.0\.1, which is loopback/);
    assert.equal(hits, before, 'the receiver got nothing');
    // An IP literal is refused before any connection.
    const literal = await sendWebhook(`http://${hostPort}/`, {}, '{}', { policy: { allowLoopback: false, requireHttps: false } });
    assert.match(String(literal.error), /loopback/);
    assert.equal(hits, before);
  });

  it('follows no redirect, reads a few KB of the answer at most, and answers within its deadline', async () => {
    const hostPort = await ready;
    const redirect = await sendWebhook(`http://${hostPort}/redirect`, {}, '{}', { policy: local });
    assert.equal(redirect.status, 302, 'a 3xx is the attempt\'s status, not followed');
    const big = await sendWebhook(`http://${hostPort}/big`, {}, '{}', { policy: local });
    assert.equal(big.status, 200);
    // A receiver that accepts the connection and never answers: the deadline ends the attempt.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const timedOut = await sendWebhook(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/`, {}, '{}', { policy: local, timeoutMs: 300 });
    silent.closeAllConnections();
    silent.close();
    assert.equal(timedOut.status, 0);
    assert.match(String(timedOut.error), /timeout/);
  });
});
