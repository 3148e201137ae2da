/** A value single-quoted for a POSIX shell (a quote inside closes, escapes and reopens the quoting). */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A value as one POSIX shell word: as it is when nothing in it is special, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+,-]+$/.test(value) ? value : shellQuote(value);
}
