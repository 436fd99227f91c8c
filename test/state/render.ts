import type { StateMachine } from '../../lib/state-machines.js';

/** The markdown table of one state machine, exactly as docs/state-machines.md carries it. */
export function renderMachine(m: StateMachine): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const rows = Object.entries(m.transitions).map(
    ([name, t]) => `| ${name} | ${esc(t.from)} | ${esc(t.to)} | ${esc(t.by)} | ${esc(t.when)}${t.back ? ` **Back:** ${esc(t.back)}` : ''} |`,
  );
  return [
    `States, in order: ${m.states.map((s) => `\`${s}\``).join(' → ')}. Stored in: ${m.stored}.`,
    '',
    '| transition | from | to | who may make it | when |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
