/** The ready-to-paste `curl` line the demo prints (single line, POSIX-shell quoted). */
import { shellQuote } from '../util/shell-word.js';

export function patientsCurl(apiBase: string, careId: string, token: string): string {
  const body = JSON.stringify({ platformCareId: careId, token });
  return `curl -sS -X POST ${shellQuote(`${apiBase}/api/patients`)} -H 'Content-Type: application/json' -d ${shellQuote(body)}`;
}
