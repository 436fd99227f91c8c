/** A benchmark's positive number setting from the environment (`fallback` when unset, zero, negative or not a number). */
export function envNumber(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
