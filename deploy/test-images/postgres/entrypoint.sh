#!/bin/sh
# Test only: what the official image does on start, in short. An empty data
# directory gets a cluster whose superuser is POSTGRES_USER with
# POSTGRES_PASSWORD (password login over TCP) and the database POSTGRES_DB.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile="$(mktemp)"
    printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$db" != postgres ]; then
        echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
    echo "stand-in postgres: initialised $PGDATA (user $user, database $db)"
fi
if [ "${1:-}" = postgres ]; then
    shift
    set -- postgres -c listen_addresses='*' "$@"
fi
exec "$@"
