/**
 * The images the container runtimes (docker compose, Docker Swarm) run, and the users and
 * workers they run with: one list, so a stack on one host and one over several run the same.
 */
/**
 * Default images (issue 10), current and pinned: Kong 3.9.3 (nginx CVE fixes,
 * Kong/kong CHANGELOG.md), HAPI FHIR starter v8.10.0-3 (tags are the starter's
 * `image/` git tags, .github/workflows/build-images.yaml), Postgres 16.13
 * (docker-library/postgres versions.json). No digest is pinned here: none could
 * be read from a registry where this was written; pin one with the image flags
 * (`--kong-image kong:3.9.3@sha256:…`), which also name a hospital's own registry.
 */
export const IMAGES = Object.freeze({
  kong: 'kong:3.9.3',
  postgres: 'postgres:16.13',
  hapi: 'hapiproject/hapi:v8.10.0-3',
});

/** Kong's nginx workers: Kong's `auto` means one per host CPU (kong_defaults.lua). */
export const KONG_WORKERS = 2;

/** The uid the API image's Dockerfile runs as (the node user of Debian-based Node images). */
export const API_IMAGE_UID = 1000;

/**
 * The uid:gid HAPI's image runs as (hapifhir/hapi-fhir-jpaserver-starter Dockerfile:
 * `USER 65532:65532`, distroless nonroot): hapi-watchdog runs as the same, which is
 * what lets it signal HAPI with no capability (kill(2)). An image with another
 * user is not watched; the watchdog's log says it finds no process to watch.
 */
export const HAPI_IMAGE_USER = '65532:65532';

/** The tag the repository's Dockerfile is built as when no --api-image is given. */
export function builtApiImage(version: string): string {
  return `hospital-api:${version}`;
}
