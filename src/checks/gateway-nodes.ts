/**
 * §4.5.4 on every host that publishes the gateway (issue 29): where the gateway runs on
 * several hosts behind the hospital's load balancer (swarm: each node running a gateway
 * task publishes its HTTPS port there, mode host), the Hospital API's key must read
 * /fhir-api-key-auth/metadata on each of them, over HTTPS verified against the hospital CA
 * for the site's name (the name the load balancer is reached by, and the certificate
 * names): a node serving an old configuration, another certificate or nothing at all would
 * fail one request in N behind the balancer. A one-host runtime has no such list: the
 * checks before this one probe its gateway at the site's address.
 */
import { Agent } from 'undici';
import { describeFailure, httpGet, isCapabilityStatement } from './http.js';
import { propagationNote, withinPropagation } from '../runtime/propagation.js';
import type { Check } from './types.js';

export const gatewayNodes: Check = {
  id: 'gateway-nodes',
  spec: '4.5.4',
  title: "The Hospital API's key reads /fhir-api-key-auth/metadata on every host that publishes the gateway",
  mandatory: true,
  async run(ctx) {
    if (!ctx.runtime.gatewayNodes) return { status: 'skip', summary: 'one host: the gateway was probed at the site address', detail: '' };
    if (!ctx.apiKey) return { status: 'fail', summary: 'FHIR_API_KEY is not set in hospital-api.env', detail: '', hint: 'Create the consumer: `hospital-api consumer create <name> --write-env`.' };
    const nodes = await ctx.runtime.gatewayNodes();
    if (nodes.length === 0) return { status: 'fail', summary: 'no host publishes the gateway', detail: '', hint: 'See `hospital-api status`.' };
    const host = ctx.config.hosts[0] ?? 'localhost';
    const port = ctx.config.ports.gatewayHttps;
    const probe = async (n: (typeof nodes)[number]) => {
      // a host Swarm runs a gateway task on but gives no address for is not probed, so it cannot pass
      if (n.address === null) return { node: n.node, ok: false, what: `${n.node}: no address known for it (\`docker node inspect\`)` };
      const address = n.address.includes(':') ? `[${n.address}]` : n.address;
      // verified for the site's name, whichever address the connection goes to
      const agent = new Agent({ connect: { ca: ctx.caPem, servername: host, rejectUnauthorized: true } });
      try {
        const reply = await httpGet(`https://${address}:${port}/fhir-api-key-auth/metadata`, {
          dispatcher: agent,
          headers: { apikey: ctx.apiKey!, host: `${host}:${port}` },
          timeoutMs: 30_000,
        });
        const ok = reply.status === 200 && isCapabilityStatement(reply.body);
        return { node: n.node, ok, what: `${n.node} ${n.address}: ${ok ? '200 CapabilityStatement' : reply.status}` };
      } catch (err) {
        return { node: n.node, ok: false, what: `${n.node} ${n.address}: ${describeFailure(err)}` };
      } finally {
        await agent.close();
      }
    };
    // each proxy serves a key just created within the runtime's propagation time (propagation.ts)
    const rounds = await Promise.all(nodes.map((n) => withinPropagation(ctx, () => probe(n), (r) => r.ok)));
    const results = rounds.map((r) => r.result);
    const failed = results.filter((r) => !r.ok);
    const detail = results.map((r) => r.what).join('; ') + propagationNote(ctx, Math.max(...rounds.map((r) => r.waitedMs)));
    if (failed.length) {
      return {
        status: 'fail',
        summary: `not on ${failed.map((r) => r.node).join(', ')} of ${results.length} hosts`,
        detail,
        hint: 'Each host behind the load balancer must serve the same gateway: see `hospital-api status` and the gateway logs of those hosts.',
      };
    }
    return { status: 'pass', summary: `200 CapabilityStatement on ${results.length} hosts: ${results.map((r) => r.node).join(', ')}`, detail };
  },
};
