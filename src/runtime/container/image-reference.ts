/** An image reference as the container runtimes report it (`status`, the acceptance record's versions). */

/** "repo:tag" → [repo, tag]; a registry port is not a tag. */
export function splitReference(ref: string): [string, string] {
  const at = ref.indexOf('@');
  const base = at >= 0 ? ref.slice(0, at) : ref;
  const colon = base.lastIndexOf(':');
  if (colon > base.lastIndexOf('/')) return [base.slice(0, colon), base.slice(colon + 1)];
  return [base, at >= 0 ? ref.slice(at + 1) : 'latest'];
}
