import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getLedgerSender } from '../../lib/deps/anchoring.js';
import { getConfig } from '../../lib/deps/core.js';
import { getRpcReader } from '../../lib/deps/evidence.js';
import { formatWei } from '../../lib/evidence/v1-read.js';
import { LedgerStatusResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

/** The native coin of the preset networks (a custom network's is not known). */
const CURRENCY: Record<string, string> = { local: 'ETH', polygon: 'POL', 'polygon-amoy': 'POL' };

export const route = createRoute({
  method: 'get',
  path: '/api/v1/ledger/status',
  tags: ['v1'],
  summary: "The ledger wallet's balance and state (no credentials)",
  description:
    'Network, chain id, the service wallet address and its balance (wei as a decimal string, and in the native coin), the latest block, ' +
    'the wallet transactions sent but not yet mined, and low_balance with a warning when the balance is below the configured threshold ' +
    '(LEDGER_LOW_BALANCE_WEI, default 0.1 of the native coin). Read from the chain now; 503 ledger_unavailable when the node cannot be reached.',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'Wallet status.', content: { 'application/json': { schema: LedgerStatusResponse } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { ledgerSender: getLedgerSender, config: getConfig, rpcReader: getRpcReader } });

app.openapi(route, async (c) => {
  const { ledger } = c.var.deps.config();
  const [status, latestBlock] = await Promise.all([(await c.var.deps.ledgerSender()).walletStatus(), c.var.deps.rpcReader().blockNumber()]);
  const currency = CURRENCY[ledger.network] ?? null;
  c.header('Cache-Control', 'no-cache');
  return c.json(
    {
      network: ledger.network,
      chain_id: status.chainId,
      wallet_address: status.address,
      balance_wei: status.balanceWei.toString(),
      balance: formatWei(status.balanceWei),
      currency,
      latest_block: latestBlock,
      pending_transactions: status.pendingTxs,
      low_balance: status.lowBalance,
      low_balance_threshold_wei: ledger.lowBalanceWei.toString(),
      warning: status.lowBalance
        ? `The wallet balance (${formatWei(status.balanceWei)}${currency ? ` ${currency}` : ''}) is below the threshold of ${formatWei(ledger.lowBalanceWei)}: top it up, or anchoring stops when it cannot pay for gas.`
        : null,
      explorer_tx_url_template: ledger.explorerTxUrl,
    },
    200,
  );
});

export const handler = handle(app);
