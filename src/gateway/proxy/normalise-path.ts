/**
 * Kong matches routes on the normalised path (kong/router/utils.lua, kong/tools/uri.lua): percent-decoded
 * unreserved characters and resolved dot segments, so `/open/../secret` cannot
 * reach a route by another prefix. Most paths need no work: checked first.
 */
const NEEDS_WORK = /%|\/\.|\/\//;

function decodeUnreserved(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (all, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${hex.toUpperCase()}`;
  });
}

/** Returns the normalised path, or null when it climbs above the root. */
export function normalisePath(path: string): string | null {
  if (!NEEDS_WORK.test(path)) return path;
  const decoded = decodeUnreserved(path);
  const out: string[] = [];
  const parts = decoded.split('/');
  for (let i = 1; i < parts.length; i++) {
    const seg = parts[i] as string;
    const last = i === parts.length - 1;
    if (seg === '.' || (seg === '' && !last)) {
      if (last) out.push('');
      continue;
    }
    if (seg === '..') {
      if (out.length === 0) return null;
      out.pop();
      if (last) out.push('');
      continue;
    }
    out.push(seg);
  }
  return `/${out.join('/')}`;
}
