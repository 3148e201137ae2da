/**
 * Text from a file (a record, a log) made safe to print on a terminal: every
 * control character (C0, DEL, C1; ESC, so no escape sequence survives) is
 * shown as `\xNN` instead of being sent. One character class, no backtracking.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
