/**
 * Keys that no FHIR element is named and that reach an object's prototype when a JSON document is
 * copied or merged by key (`__proto__`, `constructor`, `prototype`). R4 element names are
 * `[a-z][A-Za-z0-9]*` (elementdefinition.html, eld-19/eld-20), so none of them is a FHIR element:
 * a body carrying one is refused, never stored (JSON.parse keeps `__proto__` as an own key, and
 * JSON.stringify would serve it back).
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Whether a parsed document has a forbidden key anywhere; iterative, each node once, no paths built. */
export function hasForbiddenKey(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const node = stack.pop();
    if (!node || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const v of node) if (v && typeof v === 'object') stack.push(v);
      continue;
    }
    for (const key of Object.keys(node)) {
      if (FORBIDDEN_KEYS.has(key)) return true;
      const child = (node as Record<string, unknown>)[key];
      if (child && typeof child === 'object') stack.push(child);
    }
  }
  return false;
}

/**
 * The JSON path (`$.contact[0].__proto__`) of the first forbidden key in a parsed document, or
 * undefined. Paths are built only when there is such a key (the common case costs one plain walk).
 */
export function forbiddenKeyPath(value: unknown, root = '$'): string | undefined {
  if (!hasForbiddenKey(value)) return undefined;
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) if (node[i] && typeof node[i] === 'object') stack.push([node[i], `${path}[${i}]`]);
      continue;
    }
    for (const key of Object.keys(node)) {
      if (FORBIDDEN_KEYS.has(key)) return `${path}.${key}`;
      const child = (node as Record<string, unknown>)[key];
      if (child && typeof child === 'object') stack.push([child, `${path}.${key}`]);
    }
  }
  return undefined;
}
