/** The human table of check results; glyphs defined once (style.md §5). */
import type { ChalkInstance } from 'chalk';
import { renderTable } from '../output/table.js';
import type { CheckResult } from './types.js';

export function renderChecks(results: ReadonlyArray<Omit<CheckResult, 'hint'> & { hint?: string }>, colour: ChalkInstance): string {
  const glyph = {
    pass: colour.green('[✓] pass'),
    warn: colour.yellow('[!] warn'),
    fail: colour.red('[✗] fail'),
    skip: colour.dim('[-] skip'),
    error: colour.red('[✗] error'),
  } as const;
  const rows = results.map((r) => [r.spec, glyph[r.status], r.title, r.summary, `${r.durationMs} ms`]);
  let text = renderTable(['#', 'status', 'check', 'result', 'time'], rows);
  for (const r of results) if (r.hint && r.status !== 'pass') text += `  ${r.id}: ${r.hint}\n`;
  return text;
}
