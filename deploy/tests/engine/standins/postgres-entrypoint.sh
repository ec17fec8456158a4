#!/bin/bash
# The stand-in postgres image's entrypoint (see postgres.Dockerfile): written
# for Weft's tests to the documented contract of the official image.
set -euo pipefail

# `docker run postgres -c x=y` means `postgres -c x=y`.
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

# VAR or the contents of VAR_FILE (not both).
file_env() {
  local var="$1" file="${1}_FILE" default="${2:-}"
  if [ -n "${!var:-}" ] && [ -n "${!file:-}" ]; then
    echo "error: both $var and $file are set" >&2; exit 1
  fi
  local value="$default"
  if [ -n "${!var:-}" ]; then value="${!var}"; elif [ -n "${!file:-}" ]; then value="$(< "${!file}")"; fi
  export "$var"="$value"
  unset "$file"
}

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  if [ -z "$POSTGRES_PASSWORD" ] && [ "${POSTGRES_HOST_AUTH_METHOD:-}" != trust ]; then
    echo "error: database is uninitialized and POSTGRES_PASSWORD is not set" >&2; exit 1
  fi
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
    --auth-local=trust --auth-host="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" ${POSTGRES_INITDB_ARGS:-} >/dev/null
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  printf 'host all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >> "$PGDATA/pg_hba.conf"
  # Create the database over the socket only, then start for real.
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -q -c "create database \"$POSTGRES_DB\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -q -f "$f" ;;
      *.sh) . "$f" ;;
    esac
  done 2>/dev/null || true
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
