/**
 * §4.5.4: the key the Hospital API uses (FHIR_API_KEY), sent as `apikey` to
 * the key-auth route over HTTPS verified against the hospital CA → 200 with a
 * CapabilityStatement. Verification is never disabled (spec §4.5.4).
 */
import { isCapabilityStatement } from './http.js';
import { gatewayGet } from './gateway-probe.js';
import { propagationNote, withinPropagation } from '../runtime/propagation.js';
import type { Check } from './types.js';

export const keyAuthMetadata: Check = {
  id: 'key-auth-metadata',
  spec: '4.5.4',
  title: "The Hospital API's key reads /fhir-api-key-auth/metadata over verified HTTPS",
  mandatory: true,
  async run(ctx) {
    if (!ctx.apiKey) {
      return {
        status: 'fail',
        summary: 'FHIR_API_KEY is not set in hospital-api.env',
        detail: '',
        hint: 'Create the consumer: `hospital-api consumer create <name> --write-env`.',
      };
    }
    const apikey = ctx.apiKey;
    // a key just created reaches a gateway on several hosts within the runtime's propagation time
    const { result: probe, waitedMs } = await withinPropagation(
      ctx,
      () => gatewayGet(ctx, '/fhir-api-key-auth/metadata', { apikey }),
      (p) => 'reply' in p && p.reply.status === 200 && isCapabilityStatement(p.reply.body),
    );
    if ('failure' in probe) return probe.failure;
    const { status, body } = probe.reply;
    const ok = status === 200 && isCapabilityStatement(body);
    return {
      status: ok ? 'pass' : 'fail',
      summary: ok ? '200 CapabilityStatement' : `${status}${status === 401 ? ': the key is not accepted' : ''}`,
      detail: `GET ${probe.url} (apikey: FHIR_API_KEY, CA: ${ctx.caPath})${propagationNote(ctx, waitedMs)}`,
      httpStatus: status,
      ...(ok ? {} : { hint: 'A 401 means FHIR_API_KEY is not a key-auth credential of any consumer: run `consumer create --write-env`.' }),
    };
  },
};
