/**
 * DEMO ONLY: a stand-in for the platform's `/validate-access` (spec §4.1 rule
 * 2), run by the supervisor as the `platform` component of a demo install.
 * It accepts the demo tokens `hospital-api demo` printed, each for its own
 * care id, and answers `{platformCareId}` so the Hospital API can check the
 * grant matches the patient asked for. Loopback under the native runtime; the
 * docker runtime publishes it on the compose network (0.0.0.0), so its
 * listener is bounded like every other (issue 24).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { createBoundedHttpServer, type PlainHttpLimits } from '../util/socket-guard.js';
import { careIdFor, readTokens } from './tokens.js';

export type StandInLimits = PlainHttpLimits;

/**
 * One small request per patient request of the Hospital API, so the bounds are
 * the gateway admin API's (src/gateway/admin/server.ts): header, request,
 * keep-alive and idle time-outs, and at `maxConnections` a newcomer closes
 * the idlest connection rather than being refused (src/util/socket-guard.ts).
 */
export const STAND_IN_LIMITS: StandInLimits = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  maxConnections: 256,
});

function presentedToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  // The Hospital API forwards the token unchanged; accept a Bearer prefix too.
  return value.replace(/^Bearer\s+/i, '');
}

export function buildPlatformStandIn(dir: string, bounds: Partial<StandInLimits> = {}): FastifyInstance {
  const limits: StandInLimits = { ...STAND_IN_LIMITS, ...bounds };
  const app = Fastify({ logger: false, serverFactory: (handler) => createBoundedHttpServer(limits, handler) });
  app.get('/health', async () => ({ demo: true }));
  const validate = async (req: { headers: Record<string, string | string[] | undefined>; body?: unknown; query?: unknown }, reply: { code(n: number): unknown }) => {
    const token = presentedToken(req.headers.authorization);
    // Read on each call: the demo writes tokens after the stand-in starts.
    const careId = token ? careIdFor(readTokens(dir), token) : undefined;
    if (!careId) {
      reply.code(401);
      return { message: 'DEMO platform stand-in: unknown or missing token' };
    }
    const asked = (req.body as { platformCareId?: unknown } | undefined)?.platformCareId ?? (req.query as { platformCareId?: unknown } | undefined)?.platformCareId;
    if (asked !== undefined && String(asked) !== careId) {
      reply.code(403);
      return { message: 'DEMO platform stand-in: the token is for another patient' };
    }
    return { platformCareId: careId, demo: true };
  };
  app.get('/validate-access', validate);
  app.post('/validate-access', validate);
  return app;
}

/** Runs until SIGTERM/SIGINT; prints the one-line ready message on stderr. */
export async function runPlatformStandIn(dir: string, host: string, port: number): Promise<number> {
  const app = buildPlatformStandIn(dir);
  await app.listen({ host, port });
  process.stderr.write(`DEMO platform stand-in ready on http://${host}:${port}/validate-access\n`);
  await new Promise<void>((resolve) => {
    const stop = () => void app.close().then(() => resolve());
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  return 0;
}
