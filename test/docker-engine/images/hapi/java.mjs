#!/usr/local/bin/node
// `java` for the hapi stand-in image, which has no JVM: it answers the one
// command the image is run with as a health check, `java -cp /app HealthCheck`.
// The real image (hapiproject/hapi v8.10+, built from hapi-fhir-jpaserver-starter's
// Dockerfile) compiles /app/HealthCheck.java, which asks the server's Spring Boot
// actuator, /actuator/health on port 8080 (here 127.0.0.1: the front listens on IPv4): exit 0 when it answers 200 with
// status UP, 1 otherwise. Anything else is refused as a JVM refuses a class it
// cannot find.
const args = process.argv.slice(2);
if (args.length !== 3 || !['-cp', '-classpath', '--class-path'].includes(args[0]) || args[1] !== '/app' || args[2] !== 'HealthCheck') {
  process.stderr.write(`Error: Could not find or load main class ${args.at(-1) ?? ''}\n(this stand-in's java runs -cp /app HealthCheck only)\n`);
  process.exit(1);
}
try {
  const res = await fetch('http://127.0.0.1:8080/actuator/health', { signal: AbortSignal.timeout(5000) });
  const body = await res.json().catch(() => ({}));
  if (res.status === 200 && body.status === 'UP') process.exit(0);
  process.stderr.write(`health: ${res.status} ${JSON.stringify(body)}\n`);
} catch (err) {
  process.stderr.write(`health: ${err.message}\n`);
}
process.exit(1);
