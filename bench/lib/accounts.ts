/** Accounts for a benchmark, made as a user makes them: the real register and admin endpoints over HTTP. */

export interface Account {
  email: string;
  password: string;
  accountId: string;
  apiKey: string;
}

/** A fresh account through the real register endpoint, upgraded through the real admin endpoint. */
export async function createAccount(base: string, adminToken: string, tier: 'pro' | 'enterprise'): Promise<Account> {
  const email = `bench-${Math.random().toString(36).slice(2)}@example.test`;
  const password = 'correct horse battery staple';
  const res = await fetch(`${base}/api/v2/account/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`register failed: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { account_id: string; api_key: string };
  const up = await fetch(`${base}/api/v2/admin/accounts/${body.account_id}/tier`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ tier }),
  });
  if (up.status !== 200) throw new Error(`set-tier failed: ${up.status} ${await up.text()}`);
  return { email, password, accountId: body.account_id, apiKey: body.api_key };
}
