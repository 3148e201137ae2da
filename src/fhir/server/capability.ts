/**
 * GET /metadata: an R4 CapabilityStatement (http://hl7.org/fhir/R4/capabilitystatement.html): kind instance with
 * implementation (cpb-14), fhirVersion 4.0.1, JSON formats, every served type
 * once (cpb-9) with its interactions and unique search parameters (cpb-12).
 */
import { createHash } from 'node:crypto';
import { VERSION } from '../../version.js';
import type { FhirResponse } from './context.js';
import { paramsFor } from '../definitions/search-params.js';
import { resourceTypes } from './resource-types.js';

const INTERACTIONS = ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'create', 'search-type'];
const STARTED = new Date().toISOString();
let resources: unknown[] | undefined;
/** Serialized answers by public base (the base appears in implementation.url); built once per start. */
const cache = new Map<string, { raw: Buffer; etag: string }>();
const CACHE_BASES = 32;
let builds = 0;

/** How many times the CapabilityStatement was serialized since start (one per distinct public base). */
export function metadataBuilds(): number {
  return builds;
}

/**
 * GET [base]/metadata from a cache: the statement is ~900 KB of JSON, so it is serialized once per
 * start (per public base: direct, or through each gateway route) and sent as is, with an ETag
 * (R4 http.html#capabilities: SHOULD).
 */
export function metadata(base: string): FhirResponse {
  let hit = cache.get(base);
  if (!hit) {
    builds++;
    const raw = Buffer.from(JSON.stringify(capabilityStatement(base)));
    hit = { raw, etag: `W/"${createHash('sha256').update(raw).digest('base64url').slice(0, 16)}"` };
    if (cache.size >= CACHE_BASES) cache.delete(cache.keys().next().value as string);
    cache.set(base, hit);
  }
  return { status: 200, raw: hit.raw, etag: hit.etag };
}

function resourceEntries(): unknown[] {
  resources ??= [...resourceTypes()].map((type) => {
    const params = [...paramsFor(type).values()].sort((a, b) => a.code.localeCompare(b.code));
    const searchParam = [
      { name: '_id', type: 'token', definition: 'http://hl7.org/fhir/SearchParameter/Resource-id', documentation: 'Logical id of the resource' },
      { name: '_lastUpdated', type: 'date', definition: 'http://hl7.org/fhir/SearchParameter/Resource-lastUpdated', documentation: 'When the resource version last changed' },
      ...params.map((p) => ({ name: p.code, type: p.type, definition: p.url, documentation: p.description })),
    ];
    const refs = params.filter((p) => p.type === 'reference').map((p) => `${type}:${p.code}`);
    return {
      type,
      profile: `http://hl7.org/fhir/StructureDefinition/${type}`,
      interaction: INTERACTIONS.map((code) => ({ code })),
      versioning: 'versioned-update',
      readHistory: true,
      updateCreate: true,
      conditionalCreate: true,
      conditionalRead: 'not-supported',
      conditionalUpdate: true,
      conditionalDelete: 'single',
      searchInclude: refs.length ? ['*', ...refs] : undefined,
      searchParam,
      operation: [
        ...(type === 'Patient' ? [{ name: 'everything', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything' }] : []),
        { name: 'validate', definition: 'http://hl7.org/fhir/OperationDefinition/Resource-validate' },
      ],
    };
  });
  return resources;
}

export function capabilityStatement(base: string): Record<string, unknown> {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: STARTED,
    publisher: 'hospital-api',
    kind: 'instance',
    software: { name: 'hospital-api FHIR server', version: VERSION },
    implementation: { description: 'hospital-api native FHIR R4 server', url: base },
    fhirVersion: '4.0.1',
    format: ['application/fhir+json', 'json'],
    patchFormat: ['application/json-patch+json'],
    rest: [
      {
        mode: 'server',
        resource: resourceEntries(),
        interaction: [{ code: 'transaction' }, { code: 'batch' }],
        searchParam: [
          { name: '_count', type: 'number', documentation: 'Page size (default 20, at most 1000)' },
          { name: '_sort', type: 'string', documentation: '_id, _lastUpdated or a search parameter; -name for descending' },
        ],
      },
    ],
  };
}
