/** The human table of check results; glyphs defined once (as flutter_tools' lib/src/doctor.dart does). */
import type { ChalkInstance } from 'chalk';
import { GLYPHS } from '../output/colour.js';
import { renderTable } from '../output/table.js';
import type { CheckResult } from './types.js';

export function renderChecks(results: ReadonlyArray<Omit<CheckResult, 'hint'> & { hint?: string }>, colour: ChalkInstance): string {
  const glyph = {
    pass: colour.green(`${GLYPHS.pass} pass`),
    warn: colour.yellow(`${GLYPHS.warn} warn`),
    fail: colour.red(`${GLYPHS.fail} fail`),
    skip: colour.dim(`${GLYPHS.skip} skip`),
    error: colour.red(`${GLYPHS.error} error`),
  } as const;
  const rows = results.map((r) => [r.spec, glyph[r.status], r.title, r.summary, `${r.durationMs} ms`]);
  let text = renderTable(['#', 'status', 'check', 'result', 'time'], rows);
  for (const r of results) if (r.hint && r.status !== 'pass') text += `  ${r.id}: ${r.hint}\n`;
  return text;
}

/** The progress line printed as each check finishes (verify and the demo). */
export function formatCheckProgress(r: Pick<CheckResult, 'status' | 'title' | 'durationMs'>): string {
  return `  ${r.status.padEnd(5)} ${r.title} (${r.durationMs} ms)`;
}
