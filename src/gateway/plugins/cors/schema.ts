/** cors config (Kong's kong/plugins/cors/schema.lua): origins are `*` or regexes; methods from Kong's fixed list. */
import { RE2JS } from 're2js';
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface CorsConfig {
  origins: string[] | null;
  headers: string[] | null;
  exposed_headers: string[] | null;
  methods: string[];
  max_age: number | null;
  credentials: boolean;
  private_network: boolean;
  preflight_continue: boolean;
}

export const CORS_METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'] as const;

function asteriskOrRegex(value: string): string | null {
  if (value === '*') return null;
  try {
    RE2JS.compile(value); // RE2: linear-time matching (no regex may take exponential time)
    return null;
  } catch {
    return `'${value}' is not a valid regex`;
  }
}

export const corsSchema = defineSchema({
  name: 'cors',
  version: KONG_VERSION,
  priority: 2000 /* Kong's kong/plugins/cors/handler.lua PRIORITY */,
  consumerScopable: false,
  fields: {
    origins: { type: 'array', elementCheck: asteriskOrRegex },
    headers: { type: 'array' },
    exposed_headers: { type: 'array' },
    methods: { type: 'array', default: [...CORS_METHODS], elementsOneOf: CORS_METHODS },
    max_age: { type: 'number' },
    credentials: { type: 'boolean', required: true, default: false },
    private_network: { type: 'boolean', required: true, default: false },
    preflight_continue: { type: 'boolean', required: true, default: false },
  },
});
