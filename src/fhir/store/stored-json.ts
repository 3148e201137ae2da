/**
 * A stored resource's JSON text, kept beside the object parsed from it (issue 49: cheaper JSON handling).
 * A search page or `$everything` parses every resource it reads (filters, `_include`, the references followed)
 * and the answer then serialized the same objects again: for a 1,000-resource page, about a quarter of the
 * server's time went to that second JSON.stringify. The text the store holds is itself the output of
 * JSON.stringify (sqlite-store.ts write: the only writer of `content`), and JSON.stringify(JSON.parse(t)) === t
 * for any such text (ECMA-262 JSON.parse keeps member order, JSON.stringify writes no whitespace and the same
 * number and string forms it wrote the first time), so the answer may carry the stored text in place of a
 * second serialization: the bytes are the same.
 *
 * The text is remembered per parsed object (a WeakMap: it goes with the object) and only for objects the
 * store parsed itself; searchset Bundles use it (server/bundle.ts searchsetJson), and nothing writes to a
 * resource a search or `$everything` has read before it is answered.
 */
const texts = new WeakMap<object, string>();

/** JSON.parse of a stored resource's text, remembering the text for the object it gives. */
export function parseStored<T extends object>(text: string): T {
  const value = JSON.parse(text) as T;
  texts.set(value, text);
  return value;
}

/** The stored text `value` was parsed from (parseStored), or undefined for any other object. */
export function storedText(value: object): string | undefined {
  return texts.get(value);
}
