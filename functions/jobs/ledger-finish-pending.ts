/** Scheduled: finishes anchors whose ledger receipt had not arrived in time. Lands with issue 4. */
export async function handler(): Promise<{ finished: number }> {
  return { finished: 0 };
}
