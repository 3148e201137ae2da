/** A value as one POSIX shell word: as it is when nothing in it is special, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
