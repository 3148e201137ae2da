/** Plain-text tables for the human output of commands. */

const ANSI = /\x1b\[[0-9;]*m/g;

function width(text: string): number {
  return [...text.replace(ANSI, '')].length;
}

/** Renders rows under headers with columns padded to the widest cell. */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - width(cell))))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n';
}
