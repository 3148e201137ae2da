/**
 * One page of a FHIR searchset Bundle, parsed: the fields the client needs
 * (entry resource type/id/mode and identifiers, next and self links). Used for the patient
 * search and for the shell of $everything pages (see page-scan.ts).
 */
import { HospitalApiError } from '../../errors/index.js';

export interface PageEntry {
  resourceType: string | null;
  id: string | null;
  /** searchset entry mode (`match`, `include`, `outcome`), when given. */
  mode: string | null;
  /** The resource's identifiers (system and value, null when absent or not a string). */
  identifiers: Array<{ system: string | null; value: string | null }>;
}

export interface BundlePage {
  entries: PageEntry[];
  next: string | undefined;
  self: string | undefined;
}

interface Link {
  relation?: unknown;
  url?: unknown;
}

function bad(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail });
}

function linkOf(links: unknown, relation: string): string | undefined {
  if (!Array.isArray(links)) return undefined;
  const l = (links as Link[]).find((x) => x && x.relation === relation);
  return typeof l?.url === 'string' ? l.url : undefined;
}

function identifiersOf(value: unknown): PageEntry['identifiers'] {
  if (!Array.isArray(value)) return [];
  return value.map((i: unknown) => {
    const id = (i ?? {}) as { system?: unknown; value?: unknown };
    return { system: typeof id.system === 'string' ? id.system : null, value: typeof id.value === 'string' ? id.value : null };
  });
}

/** Parses one page. @throws ERR_API_FHIR_BAD_RESPONSE when it is not a Bundle */
export function parseBundlePage(text: string): BundlePage {
  let doc: { resourceType?: unknown; entry?: unknown; link?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    throw bad('page is not JSON');
  }
  if (!doc || doc.resourceType !== 'Bundle') throw bad('page is not a Bundle');
  const parsed = doc.entry === undefined ? [] : doc.entry;
  if (!Array.isArray(parsed)) throw bad('Bundle.entry is not an array');
  const entries = parsed.map((e: unknown): PageEntry => {
    const entry = (e ?? {}) as { resource?: { resourceType?: unknown; id?: unknown; identifier?: unknown }; search?: { mode?: unknown } };
    const rt = typeof entry.resource?.resourceType === 'string' ? entry.resource.resourceType : null;
    const id = typeof entry.resource?.id === 'string' ? entry.resource.id : null;
    return {
      resourceType: rt,
      id,
      mode: typeof entry.search?.mode === 'string' ? entry.search.mode : null,
      identifiers: identifiersOf(entry.resource?.identifier),
    };
  });
  return { entries, next: linkOf(doc.link, 'next'), self: linkOf(doc.link, 'self') };
}
