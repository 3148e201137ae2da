/**
 * Logical ids and literal references as R4 writes them.
 *
 * Id: datatypes.html#id, `[A-Za-z0-9\-\.]{1,64}`. "." and ".." match that pattern but are URL
 * dot-segments (RFC 3986 §5.2.4): `Patient/..` names the type's parent, not a resource, so they are
 * refused as ids too.
 *
 * Reference.reference (references.html#literal): a relative `Type/id` with an optional
 * `/_history/vid` (the regex references.html gives, with R4's resource type names), an absolute
 * http/https URL, a `urn:uuid:`/`urn:oid:` URI (Bundle-local, datatypes.html#uuid / #oid), or
 * `#id` / `#` for a contained resource (references.html#contained). Anything else
 * (`../../etc/passwd`, `Patient/..`, `Foo/1`, `javascript:…`) is not a reference R4 defines.
 */
import { isResourceType as isKnownType } from '@medplum/core';
import { loadStructureDefinitions } from './structure-definitions.js';

/** A resource type R4 defines (Medplum answers from the definitions, so they are loaded first). */
function isResourceType(type: string): boolean {
  loadStructureDefinitions();
  return isKnownType(type) === true;
}

const ID = /^[A-Za-z0-9\-.]{1,64}$/;
const DOTS = /^\.{1,2}$/;

export function isR4Id(id: string): boolean {
  return ID.test(id) && !DOTS.test(id);
}

const RELATIVE = /^([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/([A-Za-z0-9\-.]{1,64}))?$/;
const UUID = /^urn:uuid:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// datatypes.html#oid: urn:oid:[0-2](\.(0|[1-9][0-9]*))+
const OID = /^urn:oid:[0-2](?:\.(?:0|[1-9][0-9]{0,30})){1,128}$/;
const CONTAINED = /^#(?:[A-Za-z0-9\-.]{1,64})?$/;

function relative(ref: string): boolean {
  const m = RELATIVE.exec(ref);
  return !!m && isResourceType(m[1]!) && isR4Id(m[2]!) && (m[3] === undefined || isR4Id(m[3]));
}

function absolute(ref: string): boolean {
  if (!/^https?:\/\//i.test(ref) || /\s/.test(ref) || ref.length > 4096) return false;
  try {
    const url = new URL(ref);
    // the WHATWG parser resolves dot-segments: a URL that changes under it was not in its plain form
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && !/\/\.{1,2}(?:[/?#]|$)/.test(ref.replace(/^https?:\/\/[^/]*/i, ''));
  } catch {
    return false;
  }
}

/**
 * True when `ref` is one of the literal reference forms R4 defines (see above); with `conditional`,
 * also a transaction's conditional reference `Type?query` (http.html#trules), which the transaction
 * replaces by `Type/id` before it writes.
 */
export function isR4Reference(ref: string, conditional = false): boolean {
  if (ref.startsWith('#')) return CONTAINED.test(ref);
  if (conditional) {
    const q = ref.indexOf('?');
    if (q > 0) return /^[A-Z][A-Za-z]{1,63}$/.test(ref.slice(0, q)) && isResourceType(ref.slice(0, q)) && q < ref.length - 1 && !/\s/.test(ref);
  }
  if (ref.startsWith('urn:')) return UUID.test(ref) || OID.test(ref);
  if (/^[a-z][a-z0-9+.-]*:/i.test(ref)) return absolute(ref);
  return relative(ref);
}
