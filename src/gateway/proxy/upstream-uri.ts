/**
 * The upstream path for a matched route (path_handling v0, as
 * Kong's router/utils get_upstream_uri_v0). `base` is the service path
 * (default '/'), `prefix` the matched route path.
 */
export function upstreamPathV0(base: string, requestPath: string, prefix: string, stripPath: boolean): string {
  const postfix = requestPath.slice(prefix.length);
  if (base.endsWith('/')) {
    if (!stripPath) return base + requestPath.slice(1);
    if (postfix === '') {
      if (base === '/') return '/';
      return requestPath.endsWith('/') ? base : base.slice(0, -1);
    }
    // Joined so that no '//' results.
    return postfix.startsWith('/') ? base.slice(0, -1) + postfix : base + postfix;
  }
  if (!stripPath) return requestPath === '/' ? base : base + requestPath;
  if (postfix === '') return requestPath.length > 1 && requestPath.endsWith('/') ? `${base}/` : base;
  return postfix.startsWith('/') ? base + postfix : `${base}/${postfix}`;
}
