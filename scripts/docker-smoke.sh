#!/usr/bin/env bash
# Pre-flight for the docker runtime, for hospital IT to run on their own Docker
# host before (or after) `hospital-api install`. It checks the facts about the
# real images that the project relies on and that its own test tier (which
# cannot pull images) can only take from their sources:
#   - Docker answers; Compose v2, or docker-compose 1.29+, works
#   - the kong image has no curl, but has perl with HTTP::Tiny (how install
#     reaches the admin API inside the container) and `kong health`
#   - HAPI, started against a throw-away Postgres with the settings the
#     compose file gives it, logs "HHH000400: Using dialect: …PostgresDialect"
#     (not H2) and has no shell (distroless)
#   - with --dir <install dir>: Kong's admin port 8001 is published on no host
#     address, and every published port is bound to the address install chose
# Nothing is changed on the host but a temporary network and containers
# (removed at exit). Images are pulled if missing (from your registry if you
# name it in the variables below).
#
#   scripts/docker-smoke.sh [--dir <install dir>]
#   KONG_IMAGE=… HAPI_IMAGE=… POSTGRES_IMAGE=… scripts/docker-smoke.sh
set -uo pipefail

KONG_IMAGE=${KONG_IMAGE:-kong:3.9.3}
HAPI_IMAGE=${HAPI_IMAGE:-hapiproject/hapi:v8.10.0-3}
POSTGRES_IMAGE=${POSTGRES_IMAGE:-postgres:16.13}
DIALECT=ca.uhn.fhir.jpa.model.dialect.HapiFhirPostgresDialect
HAPI_WAIT=${HAPI_WAIT:-240}
DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

failures=0
pass() { printf 'PASS  %s\n' "$1"; }
fail() { printf 'FAIL  %s\n' "$1"; failures=$((failures + 1)); }
info() { printf '      %s\n' "$1"; }

tag="hospital-api-smoke-$$"
cleanup() {
  docker rm -f "$tag-hapi" "$tag-db" >/dev/null 2>&1 || true
  docker network rm "$tag" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# 1. engine and Compose
if docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; then
  pass "Docker engine answers ($(docker info --format '{{.ServerVersion}}'))"
else
  fail "Docker engine does not answer (docker info)"; exit 1
fi
if v=$(docker compose version --short 2>/dev/null); then
  pass "Compose v2 ($v)"
elif v=$(docker-compose version --short 2>/dev/null) && printf '%s\n' "$v" | awk -F. '{ exit !($1 > 1 || ($1 == 1 && $2 >= 29)) }'; then
  pass "docker-compose $v (v1, 1.29 or later)"
else
  fail "neither 'docker compose' (v2) nor docker-compose 1.29+ works"
fi

for image in "$KONG_IMAGE" "$HAPI_IMAGE" "$POSTGRES_IMAGE"; do
  if docker image inspect "$image" >/dev/null 2>&1 || docker pull "$image"; then
    pass "image $image present ($(docker image inspect --format '{{index .RepoDigests 0}}' "$image" 2>/dev/null || echo 'no digest'))"
  else
    fail "image $image cannot be pulled"
  fi
done

# 2. kong: no curl; perl with HTTP::Tiny; kong health
if docker run --rm --entrypoint sh "$KONG_IMAGE" -c 'command -v curl' >/dev/null 2>&1; then
  info "$KONG_IMAGE has curl (the official image does not); not needed either way"
else
  pass "$KONG_IMAGE has no curl (as Kong/docker-kong ubuntu/Dockerfile purges it)"
fi
if docker run --rm --entrypoint perl "$KONG_IMAGE" -MHTTP::Tiny -e 'print "ok"' 2>/dev/null | grep -q ok; then
  pass "$KONG_IMAGE has perl with HTTP::Tiny (install's admin-API path)"
else
  fail "$KONG_IMAGE lacks perl HTTP::Tiny: install cannot reach the admin API inside it"
fi
if docker run --rm --entrypoint kong "$KONG_IMAGE" health --help >/dev/null 2>&1; then
  pass "$KONG_IMAGE has 'kong health' (its healthcheck)"
else
  fail "$KONG_IMAGE has no 'kong health'"
fi

# 3. HAPI against Postgres with the compose file's settings: the dialect in its log
password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
docker network create --internal "$tag" >/dev/null
docker run -d --name "$tag-db" --network "$tag" --network-alias hapi-database \
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
for _ in $(seq 1 "$HAPI_WAIT"); do
  seen=$(docker logs "$tag-hapi" 2>&1 | grep -o 'HHH000400: Using dialect: [A-Za-z0-9_.]*' | head -n 1)
  [ -n "$seen" ] && break
  sleep 1
done
if [ "$seen" = "HHH000400: Using dialect: $DIALECT" ]; then
  pass "HAPI logs '$seen'"
elif [ -n "$seen" ]; then
  fail "HAPI logs '$seen', not $DIALECT"
else
  fail "HAPI logged no HHH000400 dialect line within ${HAPI_WAIT}s (docker logs $tag-hapi)"
fi
if docker exec "$tag-hapi" sh -c true >/dev/null 2>&1; then
  info "$HAPI_IMAGE has a shell (the official image is distroless)"
else
  pass "$HAPI_IMAGE has no shell (no sh/curl healthcheck can work there)"
fi

# 4. an installation: admin port never published, published ports where install put them
if [ -n "$DIR" ]; then
  project=$(sed -n 's/^COMPOSE_PROJECT_NAME=//p' "$DIR/docker/.env" 2>/dev/null)
  if [ -z "$project" ]; then
    fail "$DIR/docker/.env names no compose project (is $DIR a docker install?)"
  else
    ids=$(docker ps -q --filter "label=com.docker.compose.project=$project")
    bindings=$(for id in $ids; do docker inspect --format '{{$s := index .Config.Labels "com.docker.compose.service"}}{{range $p, $b := .NetworkSettings.Ports}}{{range $b}}{{$s}} {{$p}} {{.HostIp}}:{{.HostPort}}{{"\n"}}{{end}}{{end}}' "$id"; done | sed '/^$/d' | sort)
    printf '%s\n' "$bindings" | sed 's/^/      published: /'
    if printf '%s\n' "$bindings" | grep -q ' 8001/tcp '; then
      fail "Kong's admin port 8001 is published on the host"
    else
      pass "Kong's admin port 8001 is published on no host address"
    fi
    if printf '%s\n' "$bindings" | grep -q '^hapi .* 0\.0\.0\.0:'; then
      info "the FHIR port (unauthenticated FHIR API) is open on every address: --fhir-bind-address chose so"
    fi
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
