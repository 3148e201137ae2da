/** §4.5.2 (second half), spec §4.2: GET /fhir/metadata on the FHIR server → a CapabilityStatement. */
import { describeFailure, httpGet, isCapabilityStatement } from './http.js';
import type { Check } from './types.js';

export const fhirMetadata: Check = {
  id: 'fhir-metadata',
  spec: '4.5.2',
  title: 'FHIR server /fhir/metadata returns a CapabilityStatement',
  mandatory: true,
  async run(ctx) {
    const url = `${ctx.urls.fhirBase}/metadata`;
    try {
      const res = await httpGet(url, { timeoutMs: 30_000 });
      const ok = res.status === 200 && isCapabilityStatement(res.body);
      const version = (res.body as { fhirVersion?: string } | null)?.fhirVersion;
      return {
        status: ok ? 'pass' : 'fail',
        summary: ok ? `CapabilityStatement (FHIR ${version ?? '?'})` : `${res.status}, not a CapabilityStatement`,
        detail: `GET ${url}`,
        httpStatus: res.status,
      };
    } catch (err) {
      return { status: 'fail', summary: 'no answer', detail: `GET ${url}: ${describeFailure(err)}`, hint: 'Is the FHIR server running?' };
    }
  },
};
