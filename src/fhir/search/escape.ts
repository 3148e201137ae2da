/**
 * FHIR search value escaping (http://hl7.org/fhir/R4/search.html#escaping): after URL-decoding, `\` escapes
 * `,` `|` `$` and itself; a bare `\` before anything else is an error.
 * `,` separates OR alternatives, `|` splits system and code.
 */
import { HospitalApiError } from '../../errors/index.js';

/** At most this many comma-separated alternatives in one parameter (each becomes an SQL term). */
export const MAX_ALTERNATIVES = 100;

/**
 * Splits on unescaped `sep`, keeping escapes in the parts. For `,` (OR alternatives) an empty
 * alternative (`name=,` or `name=a,`) is refused rather than read as "anything", and so are more
 * than MAX_ALTERNATIVES alternatives.
 */
export function splitEscaped(value: string, sep: ',' | '|' | '$', name: string): string[] {
  const parts = split(value, sep, name);
  if (sep === ',') {
    if (parts.some((p) => p === '')) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail: 'empty value (nothing between commas or around them)' });
    if (parts.length > MAX_ALTERNATIVES) {
      throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail: `${parts.length} alternatives; at most ${MAX_ALTERNATIVES} are accepted per parameter` });
    }
  }
  return parts;
}

function split(value: string, sep: ',' | '|' | '$', name: string): string[] {
  // with no escape in it (the API's `system|value` has none), the parts are String.split's: the loop below gives the
  // same, a character at a time (issue 49: a search splits each value twice)
  if (!value.includes('\\')) return value.split(sep);
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (c === '\\') {
      const next = value[i + 1];
      if (next !== ',' && next !== '|' && next !== '$' && next !== '\\') {
        throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail: 'a backslash must precede , | $ or \\' });
      }
      cur += c + next;
      i++;
    } else if (c === sep) {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  return parts;
}

/** Removes the escapes of one (already split) part. */
export function unescapeValue(part: string): string {
  return part.replace(/\\([,|$\\])/g, '$1');
}

/** `system|code`, `code`, `|code`, `system|` → {system (undefined = any, null = none), code (undefined = any)}. */
export function parseToken(value: string, name: string): { system: string | null | undefined; code: string | undefined } {
  const parts = splitEscaped(value, '|', name);
  if (parts.length === 1) return { system: undefined, code: unescapeValue(parts[0] as string) };
  if (parts.length > 2) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail: 'more than one unescaped |' });
  const system = unescapeValue(parts[0] as string);
  const code = unescapeValue(parts[1] as string);
  return { system: system === '' ? null : system, code: code === '' ? undefined : code };
}
