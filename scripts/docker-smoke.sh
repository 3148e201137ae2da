#!/usr/bin/env bash
# Pre-flight for the docker runtime, for hospital IT to run on their own Docker
# host before (or after) `hospital-api install`. It checks the facts about the
# real images that the project relies on and that its own test tier (which
# cannot pull images) can only take from their sources:
#   - Docker answers; Compose v2, or docker-compose 1.29+, works
#   - the kong image has no curl, but has perl with HTTP::Tiny (how install
#     reaches the admin API inside the container) and `kong health`
#   - HAPI, started against a throw-away Postgres with the settings the
#     compose file gives it, uses the Postgres dialect (its log names it, or
#     its schema is in Postgres) and not H2, and has no shell (distroless)
#   - with --dir <install dir>: Kong's admin port 8001 is published on no host
#     address, and every published port is bound to the address install chose
# Nothing is changed on the host but a temporary network and containers
# (removed at exit). Images are pulled if missing (from your registry if you
# name it with the options or variables below). Exit 0 when every check passes.
#
#   scripts/docker-smoke.sh [--dir <install dir>] [--project <compose project>]
#                           [--kong-image <ref>] [--hapi-image <ref>] [--postgres-image <ref>]
#                           [--install-only]
#   KONG_IMAGE=… HAPI_IMAGE=… POSTGRES_IMAGE=… scripts/docker-smoke.sh
# --project defaults to COMPOSE_PROJECT_NAME in <install dir>/docker/.env;
# --install-only runs the engine and installation checks only (no image checks).
set -uo pipefail

# the defaults are the images `hospital-api install` renders (src/runtime/container/images.ts IMAGES)
KONG_IMAGE=${KONG_IMAGE:-kong:3.9.3}
HAPI_IMAGE=${HAPI_IMAGE:-hapiproject/hapi:v8.10.0-3}
POSTGRES_IMAGE=${POSTGRES_IMAGE:-postgres:16.13}
DIALECT=ca.uhn.fhir.jpa.model.dialect.HapiFhirPostgresDialect
HAPI_WAIT=${HAPI_WAIT:-240}
DIR=""
PROJECT=""
IMAGE_CHECKS=1
need() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "$1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) need "$@"; DIR=$2; shift 2 ;;
    --project) need "$@"; PROJECT=$2; shift 2 ;;
    --kong-image) need "$@"; KONG_IMAGE=$2; shift 2 ;;
    --hapi-image) need "$@"; HAPI_IMAGE=$2; shift 2 ;;
    --postgres-image) need "$@"; POSTGRES_IMAGE=$2; shift 2 ;;
    --install-only) IMAGE_CHECKS=0; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ "$IMAGE_CHECKS" = 0 ] && [ -z "$DIR" ] && [ -z "$PROJECT" ]; then
  echo "--install-only needs --dir or --project" >&2; exit 2
fi

failures=0
pass() { printf 'PASS  %s\n' "$1"; }
fail() { printf 'FAIL  %s\n' "$1"; failures=$((failures + 1)); }
info() { printf '      %s\n' "$1"; }

tag="hospital-api-smoke-$$"
cleanup() {
  docker rm -f -v "$tag-hapi" "$tag-db" >/dev/null 2>&1 || true
  # the throw-away database's named volume (the postgres image declares a VOLUME: an anonymous
  # one would stay behind after the container)
  docker volume rm "$tag-pgdata" >/dev/null 2>&1 || true
  docker network rm "$tag" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# 1. engine and Compose
if docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; then
  pass "Docker engine answers ($(docker info --format '{{.ServerVersion}}'))"
else
  fail "Docker engine does not answer (docker info)"; exit 1
fi
# as src/runtime/container/compose.ts findCompose chooses: `docker compose` answering a 2.x version,
# else docker-compose 1.29+ (service_completed_successfully) or a standalone 2.x
if v=$(docker compose version --short 2>/dev/null) && printf '%s\n' "${v#v}" | awk -F. '{ exit !($1 >= 2) }'; then
  pass "Compose v2 ($v)"
elif v=$(docker-compose version --short 2>/dev/null) && printf '%s\n' "$v" | awk -F. '{ exit !($1 > 1 || ($1 == 1 && $2 >= 29)) }'; then
  pass "docker-compose $v (v1, 1.29 or later)"
else
  fail "neither 'docker compose' (v2) nor docker-compose 1.29+ works"
fi

if [ "$IMAGE_CHECKS" = 1 ]; then
for image in "$KONG_IMAGE" "$HAPI_IMAGE" "$POSTGRES_IMAGE"; do
  if docker image inspect "$image" >/dev/null 2>&1 || docker pull "$image"; then
    pass "image $image present ($(docker image inspect --format '{{if .RepoDigests}}{{index .RepoDigests 0}}{{else}}no registry digest{{end}}' "$image" 2>/dev/null))"
  else
    fail "image $image cannot be pulled"
  fi
done

# 2. kong: no curl; perl with HTTP::Tiny; kong health
# Kong/docker-kong ubuntu/Dockerfile installs curl only to fetch kong.deb, then purges it.
if docker run --rm --entrypoint sh "$KONG_IMAGE" -c 'command -v curl' >/dev/null 2>&1; then
  info "$KONG_IMAGE has curl (the official image does not); not needed either way"
else
  pass "$KONG_IMAGE has no curl (as Kong/docker-kong ubuntu/Dockerfile purges it)"
fi
# perl is a hard dependency of kong.deb (Kong/kong build/package/nfpm.yaml); HTTP::Tiny ships with it.
# src/runtime/container/admin.ts runs `perl -MHTTP::Tiny` through `docker exec` for every admin call.
if docker run --rm --entrypoint perl "$KONG_IMAGE" -MHTTP::Tiny -e 'print "ok"' 2>/dev/null | grep -q ok; then
  pass "$KONG_IMAGE has perl with HTTP::Tiny (install's admin-API path)"
else
  fail "$KONG_IMAGE lacks perl HTTP::Tiny: install cannot reach the admin API inside it"
fi
# `kong health` is the compose file's healthcheck. In a container where Kong is not running it
# answers "Kong is not running at <prefix>" (Kong/kong kong/cmd/health.lua); an unknown command
# answers "No such command" (kong/cmd/init.lua). `--help` is no test: it leaves through
# Penlight's lapp.quit, whose exit status is not 0 on every version.
health=$(docker run --rm --entrypoint kong "$KONG_IMAGE" health 2>&1)
if printf '%s\n' "$health" | grep -q 'Kong is not running at\|no such prefix\|Kong is healthy at'; then
  pass "$KONG_IMAGE has 'kong health' (its healthcheck)"
else
  fail "$KONG_IMAGE has no working 'kong health': $(printf '%s' "$health" | head -n 1)"
fi

# 3. HAPI against Postgres with the compose file's settings: the Postgres dialect, not H2.
# HAPI 8 reads the dialect from the raw property spring.jpa.properties.hibernate.dialect
# (hapi-fhir-jpaserver-starter StarterJpaConfig; starter issue #804) or HIBERNATE_DIALECT
# (the placeholder in the starter's application.yaml). Hibernate 5 logs the dialect as
# "HHH000400: Using dialect" (INFO); Hibernate 6 as "HHH035001" at DEBUG only
# (hibernate-orm hibernate-core/src/main/java/org/hibernate/dialect/DialectLogging.java),
# so HAPI's schema in Postgres (table hfj_resource, which the H2 dialect fails to create:
# starter issue #804) is the proof when no dialect line is logged.
password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
docker network create --internal "$tag" >/dev/null
docker run -d --name "$tag-db" --network "$tag" --network-alias hapi-database -v "$tag-pgdata:/var/lib/postgresql/data" \
  -e POSTGRES_USER=hapi -e POSTGRES_DB=hapi -e POSTGRES_PASSWORD="$password" "$POSTGRES_IMAGE" >/dev/null
for _ in $(seq 1 60); do
  docker exec "$tag-db" pg_isready -h 127.0.0.1 -U hapi -d hapi >/dev/null 2>&1 && break
  sleep 2
done
docker run -d --name "$tag-hapi" --network "$tag" \
  -e SPRING_DATASOURCE_URL=jdbc:postgresql://hapi-database:5432/hapi -e SPRING_DATASOURCE_USERNAME=hapi \
  -e SPRING_DATASOURCE_PASSWORD="$password" -e SPRING_DATASOURCE_DRIVERCLASSNAME=org.postgresql.Driver \
  -e "spring.jpa.properties.hibernate.dialect=$DIALECT" -e HIBERNATE_DIALECT="$DIALECT" \
  -e SPRING_JPA_PROPERTIES_HIBERNATE_SEARCH_ENABLED=false -e HAPI_FHIR_FHIR_VERSION=R4 "$HAPI_IMAGE" >/dev/null
seen=""
schema=""
for _ in $(seq 1 "$HAPI_WAIT"); do
  seen=$(docker logs "$tag-hapi" 2>&1 | grep -o 'HHH0\(00400\|35001\): Using dialect: [A-Za-z0-9_.]*' | head -n 1)
  [ -n "$seen" ] && break
  schema=$(docker exec "$tag-db" psql -U hapi -d hapi -tAc "SELECT to_regclass('public.hfj_resource') IS NOT NULL" 2>/dev/null)
  [ "$schema" = t ] && break
  [ "$(docker inspect --format '{{.State.Running}}' "$tag-hapi" 2>/dev/null)" = true ] || break
  sleep 1
done
if [ -n "$seen" ] && [ "${seen#*Using dialect: }" = "$DIALECT" ]; then
  pass "HAPI logs '$seen'"
elif [ -n "$seen" ]; then
  fail "HAPI logs '$seen', not $DIALECT"
elif [ "$schema" = t ]; then
  pass "HAPI created its schema (hfj_resource) in Postgres: the Postgres dialect is in use"
elif [ "$(docker inspect --format '{{.State.Running}}' "$tag-hapi" 2>/dev/null)" != true ]; then
  fail "HAPI stopped before using Postgres: $(docker logs --tail 3 "$tag-hapi" 2>&1 | tr '\n' ' ')"
else
  fail "HAPI neither logged its dialect nor created its schema within ${HAPI_WAIT}s (docker logs $tag-hapi)"
fi
# distroless (gcr.io/distroless/java17-debian12:nonroot, the starter's Dockerfile): no shell
if docker exec "$tag-hapi" sh -c true >/dev/null 2>&1; then
  info "$HAPI_IMAGE has a shell (the official image is distroless)"
else
  pass "$HAPI_IMAGE has no shell (no sh/curl healthcheck can work there)"
fi
fi

# 4. an installation: admin port never published, published ports where install put them
if [ -n "$DIR" ] || [ -n "$PROJECT" ]; then
  project=$PROJECT
  if [ -z "$project" ]; then
    # docker/.env is written by src/runtime/docker/container-files.ts
    project=$(sed -n 's/^COMPOSE_PROJECT_NAME=//p' "$DIR/docker/.env" 2>/dev/null)
  fi
  if [ -z "$project" ]; then
    fail "$DIR/docker/.env names no compose project (is $DIR a docker install?)"
  else
    ids=$(docker ps -q --filter "label=com.docker.compose.project=$project")
    if [ -z "$ids" ]; then
      fail "no running container of compose project $project (hospital-api up)"
    fi
    bindings=$(for id in $ids; do docker inspect --format '{{$s := index .Config.Labels "com.docker.compose.service"}}{{range $p, $b := .NetworkSettings.Ports}}{{range $b}}{{$s}} {{$p}} {{.HostIp}}:{{.HostPort}}{{"\n"}}{{end}}{{end}}' "$id"; done | sed '/^$/d' | sort)
    [ -n "$bindings" ] && printf '%s\n' "$bindings" | sed 's/^/      published: /'
    # spec §1, §4.4: the admin API (no authentication) is never published
    if printf '%s\n' "$bindings" | grep -q ' 8001/tcp '; then
      fail "Kong's admin port 8001 is published on the host: $(printf '%s\n' "$bindings" | grep ' 8001/tcp ' | head -n 1)"
    else
      pass "Kong's admin port 8001 is published on no host address"
    fi
    # the addresses install chose (install.json docker.bindAddress / fhirBindAddress)
    if [ -n "$DIR" ] && [ -f "$DIR/install.json" ]; then
      bind=$(grep -o '"bindAddress": *"[^"]*"' "$DIR/install.json" | head -n 1 | sed 's/.*: *"\(.*\)"/\1/')
      fhirbind=$(grep -o '"fhirBindAddress": *"[^"]*"' "$DIR/install.json" | head -n 1 | sed 's/.*: *"\(.*\)"/\1/')
      wrong=$(printf '%s\n' "$bindings" | sed '/^$/d' | while read -r service target hostport; do
        want=$bind; [ "$service" = hapi ] && want=$fhirbind
        [ "$want" = 0.0.0.0 ] && [ "${hostport%:*}" = '::' ] && continue
        [ "${hostport%:*}" = "$want" ] || [ "${hostport%:*}" = "[$want]" ] || echo "$service $target on ${hostport%:*} (install chose $want)"
      done)
      if [ -n "$bind" ] && [ -z "$wrong" ]; then
        pass "published ports are bound as install chose (bind $bind, FHIR $fhirbind)"
      elif [ -n "$bind" ]; then
        fail "published ports not where install put them: $(printf '%s' "$wrong" | tr '\n' ';')"
      fi
    fi
    if printf '%s\n' "$bindings" | grep -q '^hapi .* 0\.0\.0\.0:'; then
      info "the FHIR port (unauthenticated FHIR API) is open on every address: --fhir-bind-address chose so"
    fi
    # Docker's DNAT runs before ufw's rules (moby/moby#4737, Docker docs "Packet filtering and firewalls")
    if printf '%s\n' "$bindings" | grep -q ' 0\.0\.0\.0:\| :::'; then
      if iptables -S DOCKER-USER >/dev/null 2>&1; then
        info "ports on every address bypass ufw; DOCKER-USER rules now: $(iptables -S DOCKER-USER | grep -vc '^-N') (see README, DOCKER-USER)"
      else
        info "ports on every address bypass ufw; filter them in the DOCKER-USER chain (README)"
      fi
    fi
  fi
fi

echo
if [ "$failures" -eq 0 ]; then echo "docker-smoke: all checks passed"; else echo "docker-smoke: $failures check(s) failed"; fi
exit $((failures > 0))
