import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/tmp.js';
import { makeTestPki } from '../../helpers/pki.js';
import { useFreshAdmin } from './harness.js';

const admin = useFreshAdmin();

describe('ca_certificates and upstream TLS fields (kong/db/schema/entities/{ca_certificates,services}.lua)', () => {
  it('stores a CA with its digest, refuses a leaf, and protects a CA that a service uses', async () => {
    const pki = makeTestPki(tempDir('gw-pki-'));
    const ca = await admin.call('POST', '/ca_certificates', { cert: pki.ca.certPem });
    expect(ca.status).toBe(201);
    expect(ca.json.cert_digest).toMatch(/^[0-9a-f]{64}$/);
    const leaf = await admin.call('POST', '/ca_certificates', { cert: pki.server.certPem });
    expect(leaf.status).toBe(400);
    expect(leaf.json.fields.cert).toBe('certificate does not appear to be a CA because it is missing the "CA" basic constraint');
    expect((await admin.call('POST', '/ca_certificates', { cert: 'not pem' })).json.fields.cert).toMatch(/^invalid certificate/);

    const svc = await admin.call('POST', '/services', { name: 'fhir', url: 'https://127.0.0.1:8443/fhir', tls_verify: true, ca_certificates: [ca.json.id] });
    expect(svc.status).toBe(201);
    expect(svc.json).toMatchObject({ protocol: 'https', port: 8443, tls_verify: true, ca_certificates: [ca.json.id] });
    const del = await admin.call('DELETE', `/ca_certificates/${ca.json.id}`);
    expect(del.status).toBe(400);
    expect(del.json.fields).toEqual({ '@referenced_by': 'services' });

    const plain = await admin.call('POST', '/services', { url: 'http://h', ca_certificates: [ca.json.id] });
    expect(plain.status).toBe(400);
    expect(plain.json.fields).toEqual({
      '@entity': ["failed conditional validation given value of field 'protocol'"],
      ca_certificates: 'value must be null',
    });
  });
});

describe('multipart bodies (kong/api/api_helpers.lua)', () => {
  it('reads text fields with the same keys as forms', async () => {
    const b = 'XyZ';
    const part = (name: string, value: string): string => `--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const body = part('name', 'mp') + part('host', 'up') + part('port', '8080') + part('tags[]', 'a') + `--${b}--\r\n`;
    const r = await admin.call('POST', '/services', body, `multipart/form-data; boundary=${b}`);
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ name: 'mp', host: 'up', port: 8080, tags: ['a'] });
  });
});
