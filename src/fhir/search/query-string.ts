/**
 * A query string (or a form body) as [name, value] pairs, decoded strictly. URLSearchParams turns
 * a percent-encoding that is not UTF-8 (`%FF`, or `%ED%A0%80`, a lone surrogate) into U+FFFD, so
 * `identifier=a%FF` searched for `a\uFFFD` and could match a value it was never given (issue 45).
 * Here such a value is refused (400), as RFC 3986 §2.5 expects UTF-8 octets in a URI.
 * Otherwise the same pairs as URLSearchParams: `&`-separated, empty parts skipped, the first `=`
 * splits, `+` is a space unless `plusIsSpace` is false (conditional URLs, where `+` is kept as sent).
 */
import { HospitalApiError } from '../../errors/index.js';

function decode(text: string, name: string, plusIsSpace: boolean): string {
  try {
    return decodeURIComponent(plusIsSpace ? text.replace(/\+/g, ' ') : text);
  } catch {
    throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail: 'its percent-encoding is not UTF-8 (RFC 3986 §2.5)' });
  }
}

export function parseQueryString(query: string, plusIsSpace = true): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawName = eq < 0 ? part : part.slice(0, eq);
    const name = decode(rawName, rawName.slice(0, 60), plusIsSpace);
    pairs.push([name, eq < 0 ? '' : decode(part.slice(eq + 1), name.slice(0, 60), plusIsSpace)]);
  }
  return pairs;
}
