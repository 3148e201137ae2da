#!/bin/bash
# Stand-in for docker-library/postgres's docker-entrypoint.sh, reduced to what
# the hospital-api compose file uses. Upstream behaviour kept: *_FILE secrets,
# initialisation only when PGDATA is empty (a new password against an existing
# volume is NOT applied), the temporary server listening on the unix socket only.
set -Eeuo pipefail

file_env() {
  local var="$1" fileVar="${1}_FILE" def="${2:-}"
  if [ "${!var:-}" ] && [ "${!fileVar:-}" ]; then
    echo >&2 "error: both $var and $fileVar are set (but are exclusive)"; exit 1
  fi
  local val="$def"
  if [ "${!var:-}" ]; then val="${!var}"; elif [ "${!fileVar:-}" ]; then val="$(< "${!fileVar}")"; fi
  export "$var"="$val"; unset "$fileVar"
}

if [ "${1:-}" = 'postgres' ]; then
  # as upstream: the secrets are read first (as root when started as root), then
  # the script re-executes itself as the postgres user with the values exported
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  if [ "$(id -u)" = '0' ]; then
    mkdir -p "$PGDATA"; chmod 0700 "$PGDATA"; chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
  fi
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "$POSTGRES_PASSWORD" ]; then echo >&2 'error: database is uninitialized and POSTGRES_PASSWORD is not set'; exit 1; fi
    pwfile="$(mktemp)"; printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
    # upstream: the temporary server listens on the unix socket only
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "$POSTGRES_DB" != 'postgres' ]; then
      psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -q \
        --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo 'PostgreSQL init process complete; ready for start up.'
  else
    echo 'PostgreSQL Database directory appears to contain a database; Skipping initialization'
  fi
  unset POSTGRES_PASSWORD
  exec postgres -c listen_addresses='*' "${@:2}"
fi
exec "$@"
