/** An image reference as the container runtimes report it (`status`, the acceptance record's versions). */
import type { ComponentVersion } from '../types.js';

/** "repo:tag" → [repo, tag]; a registry port is not a tag. */
export function splitReference(ref: string): [string, string] {
  const at = ref.indexOf('@');
  const base = at >= 0 ? ref.slice(0, at) : ref;
  const colon = base.lastIndexOf(':');
  if (colon > base.lastIndexOf('/')) return [base.slice(0, colon), base.slice(colon + 1)];
  return [base, at >= 0 ? ref.slice(at + 1) : 'latest'];
}

/** A component's version as its image reference names it: image, tag, and the digest only when the reference pins one. */
export function referenceVersion(name: string, ref: string): ComponentVersion {
  const [image, tag] = splitReference(ref);
  const at = ref.indexOf('@');
  return { name, version: tag, image, tag, digest: at >= 0 ? ref.slice(at + 1) : null };
}
