/**
 * A request's whole body, for the Kong and HAPI stand-ins (kong.mjs, hapi.mjs): both
 * forward a write to the one process that applies it, so they read it first.
 */
export function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
