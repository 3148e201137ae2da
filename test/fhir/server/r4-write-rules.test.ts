/**
 * Issue 24: FHIR writes refuse what R4 forbids. Wrong JSON types on every element (a complex element
 * holding a number, Basic.code: 5), also 20,000 of them in one transaction (refused as a whole, before
 * anything is written); `__proto__` / `constructor` / `prototype` keys anywhere (refused, never stored);
 * ids outside R4's `[A-Za-z0-9\-\.]{1,64}` and the dot-segments `.`/`..`, in the URL and the body;
 * references that are not a relative `Type/id[/_history/vid]`, an http(s) URL, `urn:uuid:`/`urn:oid:`
 * or `#id`. Real HTTP against the real server.
 */
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:r4-rules';
const paths = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? []);
const count = async (path: string): Promise<number> => {
  const r = await call(fhir.base, 'GET', path);
  expect(r.status, path).toBe(200);
  return ids(r.body).length;
};

/** A request whose path goes out exactly as written (WHATWG URL clients resolve `..` before sending). */
function raw(method: string, path: string, body?: string, contentType = 'application/fhir+json'): Promise<{ status: number; body: any }> {
  const url = new URL(fhir.base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path: `/fhir/${path}`, headers: { accept: 'application/fhir+json', ...(body ? { 'content-type': contentType } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('wrong JSON types on every element', () => {
  it('refuses Basic.code as a number (a CodeableConcept must be an object), naming the path, and stores nothing', async () => {
    const r = await call(fhir.base, 'POST', 'Basic', { resourceType: 'Basic', identifier: [{ system: S, value: 'code5' }], code: 5 });
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_RESOURCE_INVALID');
    expect(paths(r.body)).toContain('Basic.code');
    expect(r.body.issue[0].diagnostics).toContain('Basic.code: Invalid JSON type: expected an object (CodeableConcept), but got number');
    expect(await count(`Basic?identifier=${S}|code5`)).toBe(0);
  });

  it('finds them deep down: a backbone element, an extension value, a contained resource, a PUT and a PATCH', async () => {
    const r = await call(fhir.base, 'POST', 'Patient', {
      resourceType: 'Patient',
      identifier: [{ system: S, value: 'deep' }],
      contact: [{ name: 'Ann' }],
      extension: [{ url: 'http://example.org/x', valueCodeableConcept: 'x' }],
      contained: [{ resourceType: 'Basic', id: 'b', code: true }],
    });
    expect(r.status).toBe(400);
    expect(paths(r.body)).toEqual(expect.arrayContaining(['Patient.contact[0].name', 'Patient.extension[0].valueCodeableConcept', 'Patient.contained[0].code']));
    expect(await count(`Patient?identifier=${S}|deep`)).toBe(0);

    const b = (await call(fhir.base, 'POST', 'Basic', { resourceType: 'Basic', code: { text: 'ok' } })).body;
    const put = await call(fhir.base, 'PUT', `Basic/${b.id}`, { ...b, code: 'text' });
    expect(put.status).toBe(400);
    expect(paths(put.body)).toContain('Basic.code');
    const patch = await call(fhir.base, 'PATCH', `Basic/${b.id}`, [{ op: 'replace', path: '/code', value: 7 }], { 'content-type': 'application/json-patch+json' });
    expect(patch.status).toBe(400);
    expect(paths(patch.body)).toContain('Basic.code');
    expect((await call(fhir.base, 'GET', `Basic/${b.id}`)).body).toEqual(b);
  });

  it('refuses a transaction of 20,000 such entries as a whole, naming the first, before writing anything', async () => {
    const store = fhir.server.store;
    const update = vi.spyOn(store, 'update');
    const create = vi.spyOn(store, 'create');
    const entry = Array.from({ length: 20_000 }, () => ({ resource: { resourceType: 'Basic', code: 5 }, request: { method: 'POST', url: 'Basic' } }));
    const before = await count('Basic?_count=1000');
    const r = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry });
    expect(r.status).toBe(400);
    expect(r.body.issue[0].expression).toEqual(['Bundle.entry[0]']);
    expect(paths(r.body)).toContain('Basic.code');

    // valid entries first and one invalid at the end: still nothing written, not even rolled back
    const mixed = Array.from({ length: 20_000 }, (_, i) => ({
      resource: { resourceType: 'Basic', identifier: [{ system: S, value: `bulk-${i}` }], code: i === 19_999 ? 5 : { text: 'fine' } },
      request: { method: 'POST', url: 'Basic' },
    }));
    const m = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: mixed });
    expect(m.status).toBe(400);
    expect(m.body.issue[0].expression).toEqual(['Bundle.entry[19999]']);
    expect(update).not.toHaveBeenCalled();
    expect(create).not.toHaveBeenCalled();
    expect(await count('Basic?_count=1000')).toBe(before);
    expect(await count(`Basic?identifier=${S}|bulk-0`)).toBe(0);
  });
});

describe('__proto__, constructor and prototype keys', () => {
  const bodies: Array<[string, string, string]> = [
    ['__proto__ at the root', '{"resourceType":"Patient","identifier":[{"system":"urn:test:r4-rules","value":"proto"}],"__proto__":{"active":true}}', '$.__proto__'],
    ['constructor in a name', '{"resourceType":"Patient","identifier":[{"system":"urn:test:r4-rules","value":"proto"}],"name":[{"constructor":{"prototype":{}}}]}', '$.name[0].constructor'],
    ['prototype in an extension', '{"resourceType":"Patient","identifier":[{"system":"urn:test:r4-rules","value":"proto"}],"extension":[{"url":"http://x","prototype":1}]}', '$.extension[0].prototype'],
  ];
  it.each(bodies)('%s: 400 naming the path, nothing stored, nothing served back', async (_name, body, path) => {
    const r = await raw('POST', 'Patient', body);
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_FORBIDDEN_KEY');
    expect(paths(r.body)).toContain(path);
    expect(await count(`Patient?identifier=${S}|proto`)).toBe(0);
  });

  it('in a PUT, in a transaction entry, and as a JSON Patch path (which would write into Object.prototype)', async () => {
    const put = await raw('PUT', 'Patient/proto-put', '{"resourceType":"Patient","id":"proto-put","__proto__":{"x":1}}');
    expect(put.status).toBe(400);
    expect((await call(fhir.base, 'GET', 'Patient/proto-put')).status).toBe(404);
    const tx = await raw('POST', '', `{"resourceType":"Bundle","type":"transaction","entry":[{"resource":{"resourceType":"Patient","id":"proto-tx","__proto__":{}},"request":{"method":"PUT","url":"Patient/proto-tx"}}]}`);
    expect(tx.status).toBe(400);
    expect(paths(tx.body)).toContain('$.entry[0].resource.__proto__');
    expect((await call(fhir.base, 'GET', 'Patient/proto-tx')).status).toBe(404);

    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'P' }] })).body;
    for (const path of ['/__proto__/polluted', '/name/0/constructor/prototype/polluted', '/prototype']) {
      const r = await call(fhir.base, 'PATCH', `Patient/${p.id}`, [{ op: 'add', path, value: 'yes' }], { 'content-type': 'application/json-patch+json' });
      expect(r.status, path).toBe(400);
      expect(r.body.issue[0].diagnostics).toContain('is not a FHIR element');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await call(fhir.base, 'GET', `Patient/${p.id}`)).body.meta.versionId).toBe('1');
  });
});

describe('ids: R4 [A-Za-z0-9\\-\\.]{1,64}, and not "." or ".."', () => {
  it('PUT Patient/.. is refused, in the URL and in the body, and stores nothing', async () => {
    const r = await raw('PUT', 'Patient/..', JSON.stringify({ resourceType: 'Patient', id: '..' }));
    expect(r.status).toBe(400);
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_INVALID_ID');
    expect(r.body.issue[0].diagnostics).toContain('".." is not a valid id');
    expect(fhir.server.store.read('Patient', '..')).toBeUndefined();
    // encoded, the same
    expect((await raw('PUT', 'Patient/%2E%2E', JSON.stringify({ resourceType: 'Patient', id: '..' }))).status).toBe(400);
    expect((await raw('PUT', 'Patient/.', JSON.stringify({ resourceType: 'Patient', id: '.' }))).status).toBe(400);
    expect(fhir.server.store.read('Patient', '.')).toBeUndefined();
  });

  it('read, vread, history, delete and patch refuse a malformed id with 400 (not 404)', async () => {
    const long = 'a'.repeat(65);
    for (const [method, path] of [
      ['GET', 'Patient/..'],
      ['GET', `Patient/${long}`],
      ['GET', 'Patient/a%20b'],
      ['GET', 'Patient/../_history'],
      ['GET', 'Patient/ok/_history/..'],
      ['GET', 'Patient/ok/_history/a%2Fb'],
      ['DELETE', 'Patient/..'],
      ['PATCH', 'Patient/..'],
    ] as const) {
      const r = await raw(method, path, method === 'PATCH' ? '[]' : undefined, 'application/json-patch+json');
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.issue[0].details.text, `${method} ${path}`).toBe('ERR_FHIR_INVALID_ID');
    }
  });

  it('a body id outside the form is refused on create and in a transaction PUT', async () => {
    const r = await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', id: '..', identifier: [{ system: S, value: 'dot-id' }] });
    expect(r.status).toBe(400);
    expect(paths(r.body)).toContain('Patient.id');
    expect(await count(`Patient?identifier=${S}|dot-id`)).toBe(0);
    const tx = await raw('POST', '', JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry: [{ resource: { resourceType: 'Patient', id: '..' }, request: { method: 'PUT', url: 'Patient/..' } }] }));
    expect(tx.status).toBe(400);
    expect(fhir.server.store.read('Patient', '..')).toBeUndefined();
  });
});

describe('references: Type/id[/_history/vid], http(s) URL, urn:uuid:, urn:oid:, #id', () => {
  const obs = (reference: string, value: string) => ({ resourceType: 'Observation', identifier: [{ system: S, value }], status: 'final', code: { text: 'ref' }, subject: { reference } });

  it.each([
    ['../../etc/passwd'],
    ['Patient/..'],
    ['Patient/../../etc/passwd'],
    ['Foo/1'],
    ['javascript:alert(1)'],
    ['file:///etc/passwd'],
    ['http://example.org/fhir/../../etc/passwd'],
    ['urn:uuid:not-a-uuid'],
    ['Patient/1 2'],
  ])('refuses %j with 400 naming Observation.subject.reference, and stores nothing', async (reference) => {
    const value = `bad-${Buffer.from(reference).toString('hex')}`;
    const r = await call(fhir.base, 'POST', 'Observation', obs(reference, value));
    expect(r.status).toBe(400);
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_RESOURCE_INVALID');
    expect(paths(r.body)).toContain('Observation.subject.reference');
    expect(await count(`Observation?identifier=${S}|${value}`)).toBe(0);
  });

  it('takes every form R4 defines, and a transaction\'s conditional references', async () => {
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'target' }] })).body;
    for (const reference of [`Patient/${p.id}`, `Patient/${p.id}/_history/1`, 'https://other.example/fhir/Patient/1', 'urn:uuid:0b2c8d3a-2a5e-4b2f-9f2f-1d2e3f4a5b6c', 'urn:oid:1.2.840.10008.1']) {
      const r = await call(fhir.base, 'POST', 'Observation', obs(reference, 'good'));
      expect(r.status, `${reference}: ${JSON.stringify(r.body)}`).toBe(201);
    }
    const contained = await call(fhir.base, 'POST', 'Observation', { ...obs('#p1', 'good'), contained: [{ resourceType: 'Patient', id: 'p1' }] });
    expect(contained.status, JSON.stringify(contained.body)).toBe(201);
    const tx = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [
      { resource: obs(`Patient?identifier=${S}|target`, 'conditional'), request: { method: 'POST', url: 'Observation' } },
    ] });
    expect(tx.status, JSON.stringify(tx.body)).toBe(200);
    const stored = await call(fhir.base, 'GET', `Observation?identifier=${S}|conditional`);
    expect(stored.body.entry[0].resource.subject.reference).toBe(`Patient/${p.id}`);
    // outside a transaction a conditional reference is not a reference R4 defines
    expect((await call(fhir.base, 'POST', 'Observation', obs(`Patient?identifier=${S}|target`, 'cond-alone'))).status).toBe(400);
  });
});
