/**
 * Issue 27: where this host reaches the FHIR server directly (check 4.5.2 and
 * install's endpoint table). Docker publishes HAPI on --fhir-bind-address only,
 * so a site's host name is not where it answers; native listens on the host.
 */
import { describe, expect, it } from 'vitest';
import { siteEndpoints } from '../../src/runtime/index.js';
import { installConfig } from '../helpers/install-config.js';

const docker = (fhirBindAddress: string) =>
  installConfig({
    hosts: ['fhir.hospital.example'],
    ports: { fhir: 38080, gatewayHttps: 38443 },
    docker: { images: { kong: 'k', hapi: 'h', postgres: 'p', api: null }, bindAddress: '0.0.0.0', fhirBindAddress },
  });

describe('siteEndpoints', () => {
  it('docker: the FHIR base is the address HAPI is published on, not the site host name', () => {
    const e = siteEndpoints(docker('127.0.0.1'));
    expect(e.fhirBase).toBe('http://127.0.0.1:38080/fhir');
    expect(e.keyAuthBase).toBe('https://fhir.hospital.example:38443/fhir-api-key-auth');
    expect(siteEndpoints(docker('10.1.2.3')).fhirBase).toBe('http://10.1.2.3:38080/fhir');
    expect(siteEndpoints(docker('::1')).fhirBase).toBe('http://[::1]:38080/fhir');
  });

  it('docker: published on every address, the site host name reaches it', () => {
    expect(siteEndpoints(docker('0.0.0.0')).fhirBase).toBe('http://fhir.hospital.example:38080/fhir');
  });

  it('native: the FHIR server listens on the site host (metadata only for other addresses)', () => {
    const config = installConfig({ runtime: 'native', hosts: ['fhir.hospital.example'], ports: { fhir: 38080 } });
    expect(siteEndpoints(config).fhirBase).toBe('http://fhir.hospital.example:38080/fhir');
  });
});
