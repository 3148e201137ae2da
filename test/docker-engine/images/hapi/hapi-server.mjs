// The FHIR server of the hapi stand-in: the project's native FHIR server with
// the server address strategy HAPI FHIR JPA starter 8.x chooses
// (hapifhir/hapi-fhir-jpaserver-starter src/main/java/ca/uhn/fhir/jpa/starter/common/StarterJpaConfig.java,
// restfulServer): hapi.fhir.server_address set → HardcodedServerAddressStrategy;
// else hapi.fhir.use_apache_address_strategy=true → ApacheProxyAddressStrategy,
// which believes X-Forwarded-Host/-Proto/-Port/-Prefix from ANY caller
// (hapifhir/hapi-fhir hapi-fhir-server .../rest/server/ApacheProxyAddressStrategy.java:
// the prefix replaces the servlet path); else IncomingRequestAddressStrategy
// (the Host header the caller used, e.g. http://hapi:8080/fhir).
//   node hapi-server.mjs <data dir> <hardcoded base | ''> <apache: true|false> <listen host> <listen port>
// (hapi.mjs runs it on loopback and answers HAPI's port itself)
import { openFhirStore } from '/app/dist/fhir/store/sqlite-store.js';
import { buildFhirApp } from '/app/dist/fhir/server/app.js';

const [dataDir, hardcoded, apache, host = '0.0.0.0', port = '8080'] = process.argv.slice(2);
const store = openFhirStore(dataDir);
const app = buildFhirApp({
  store,
  // HAPI serves its whole API to whoever reaches it (compose publishes it on 127.0.0.1 only)
  fullAccess: () => true,
  ...(hardcoded ? { publicBase: hardcoded.replace(/\/+$/, '') } : {}),
  trustProxy: () => apache === 'true',
});
await app.listen({ host, port: Number(port) });
process.stderr.write(`hapi stand-in: FHIR server on ${host}:${port} (address strategy ${hardcoded ? `hardcoded ${hardcoded}` : apache === 'true' ? 'apache proxy' : 'incoming request'})\n`);
const stop = () => {
  void app.close().finally(() => {
    store.close();
    process.exit(0);
  });
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
