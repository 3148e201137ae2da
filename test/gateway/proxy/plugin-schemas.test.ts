/** Contract: plugin names, priorities (run order as Kong's spec/01-unit/12-plugins_order_spec.lua), defaults and Kong's validation messages. */
import { describe, expect, it } from 'vitest';
import { BUNDLED_PLUGINS, PLUGIN_HANDLERS, PLUGIN_SCHEMAS } from '../../../src/gateway/plugins/index.js';

function schema(name: string) {
  const s = PLUGIN_SCHEMAS.get(name);
  if (!s) throw new Error(`no schema ${name}`);
  return s;
}

describe('plugin schemas', () => {
  it('pins the run order and priorities', () => {
    expect([...PLUGIN_SCHEMAS.values()].map((s) => [s.name, s.priority])).toEqual([
      ['cors', 2000],
      ['key-auth', 1250],
      ['basic-auth', 1100],
      ['ip-restriction', 990],
      ['request-size-limiting', 951],
      ['acl', 950],
      ['rate-limiting', 910],
      ['prometheus', 13],
    ]);
    const noConsumer = [...PLUGIN_SCHEMAS.values()].filter((s) => !s.consumerScopable).map((s) => s.name);
    expect(noConsumer.sort()).toEqual(['acl', 'basic-auth', 'cors', 'key-auth']);
  });

  it('declares each plugin once, in its folder: the registry pairs each schema with its handler, and handlers carry no priority of their own (issues 11, 44)', () => {
    expect([...PLUGIN_SCHEMAS.keys()]).toEqual(BUNDLED_PLUGINS.map((p) => p.schema.name));
    expect([...PLUGIN_HANDLERS.keys()]).toEqual(BUNDLED_PLUGINS.map((p) => p.schema.name));
    for (const p of BUNDLED_PLUGINS) expect(p.handler.name).toBe(p.schema.name);
    for (const h of PLUGIN_HANDLERS.values()) expect(Object.keys(h).sort()).toEqual(['compile', 'name']);
  });

  it('fills Kong defaults', () => {
    expect(schema('key-auth').validate({})).toEqual({
      ok: true,
      config: {
        key_names: ['apikey'], hide_credentials: false, anonymous: null, key_in_header: true,
        key_in_query: true, key_in_body: false, run_on_preflight: true, realm: null,
      },
    });
    expect(schema('basic-auth').validate(undefined)).toEqual({
      ok: true, config: { anonymous: null, hide_credentials: false, realm: 'service' },
    });
    const cors = schema('cors').validate({ origins: ['https://a.example'] });
    expect(cors.ok && cors.config.methods).toEqual(['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
    expect(schema('request-size-limiting').validate({})).toEqual({
      ok: true, config: { allowed_payload_size: 128, size_unit: 'megabytes', require_content_length: false },
    });
    const rl = schema('rate-limiting').validate({ minute: 5 });
    expect(rl.ok && rl.config).toMatchObject({
      minute: 5, second: null, policy: 'local', limit_by: 'consumer', error_code: 429,
      error_message: 'API rate limit exceeded', fault_tolerant: true, hide_client_headers: false,
    });
  });

  it('reports field errors keyed like Kong', () => {
    expect(schema('rate-limiting').validate({ minute: -1 })).toEqual({ ok: false, errors: { 'config.minute': 'value must be greater than 0' } });
    expect(schema('rate-limiting').validate({})).toEqual({
      ok: false,
      errors: { 'config.@entity': "at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'" },
    });
    expect(schema('rate-limiting').validate({ second: 10, minute: 5 })).toEqual({
      ok: false, errors: { 'config.@entity': 'The limit for minute(5.0) cannot be lower than the limit for second(10.0)' },
    });
    expect(schema('key-auth').validate({ nope: 1, hide_credentials: 'x' })).toEqual({
      ok: false, errors: { 'config.nope': 'unknown field', 'config.hide_credentials': 'expected a boolean' },
    });
    expect(schema('acl').validate({ allow: ['a'], deny: ['b'] })).toEqual({
      ok: false, errors: { 'config.@entity': "only one of these fields must be non-empty: 'config.allow', 'config.deny'" },
    });
    expect(schema('ip-restriction').validate({ allow: ['10.0.0.0/33'] })).toEqual({
      ok: false, errors: { 'config.allow': "invalid ip or cidr range: '10.0.0.0/33'" },
    });
    expect(schema('request-size-limiting').validate({ size_unit: 'gigabytes' })).toEqual({
      ok: false, errors: { 'config.size_unit': 'expected one of: megabytes, kilobytes, bytes' },
    });
    expect(schema('cors').validate({ origins: ['(bad'] })).toEqual({ ok: false, errors: { 'config.origins': "'(bad' is not a valid regex" } });
  });

  it('accepts form-encoded strings for numbers and booleans', () => {
    const r = schema('rate-limiting').validate({ minute: '5', hide_client_headers: 'true' });
    expect(r.ok && [r.config.minute, r.config.hide_client_headers]).toEqual([5, true]);
  });
});
