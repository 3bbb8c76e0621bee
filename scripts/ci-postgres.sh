#!/usr/bin/env bash
# A throwaway PostgreSQL server for the team-memory tests, on loopback only.
#
#   scripts/ci-postgres.sh            # prints a postgresql:// URL on stdout
#   MEM_TEST_PG_URL=$(scripts/ci-postgres.sh) pytest tests/test_team_pg.py
#   scripts/ci-postgres.sh stop       # stops that private server (its data stays for the next start)
#
# `make test` stops the server after the tests when this script started it for them (a server
# already running, started by hand, is left running); MEM_TEST_PG_KEEP=1 keeps it for the next run.
# Idempotent, and fast once done: a running server is reused. Installs Debian's
# postgresql package when it is missing and we are root (CI); starts a private
# cluster (not the system one) under $MEM_TEST_PG_DIR that listens on a Unix
# socket in that directory only (no TCP: nothing off the machine can reach it,
# and no clash with ephemeral ports), with trust authentication; creates the
# database mem_test.
# Messages go to stderr; on failure nothing is printed on stdout and the exit
# status is non-zero, so `URL=$(...) || true` leaves URL empty.
set -euo pipefail

PORT="${MEM_TEST_PG_PORT:-54329}"
BASE="${MEM_TEST_PG_DIR:-${TMPDIR:-/tmp}/mem-test-pg-$(id -u)}"
DB=mem_test
URL="postgresql://mem@/${DB}?host=${BASE}&port=${PORT}"

say() { echo "ci-postgres: $*" >&2; }

pg_bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
    done
    local initdb
    initdb="$(command -v initdb 2>/dev/null || true)"
    [ -n "$initdb" ] && { dirname "$(readlink -f "$initdb")"; return 0; }
    return 1
}

BIN="$(pg_bindir || true)"

# stop: the private cluster under $BASE, whoever started it; stop-started: only one this script
# started (the marker it leaves), as `make test` does after the tests.
if [ "${1:-}" = stop ] || [ "${1:-}" = stop-started ]; then
    if [ "$1" = stop-started ] && [ ! -e "$BASE/started-by-ci-postgres" ]; then
        exit 0
    fi
    rm -f "$BASE/started-by-ci-postgres"
    if [ -n "$BIN" ] && [ -s "$BASE/data/postmaster.pid" ]; then
        if [ "$(id -u)" = 0 ]; then as_pg() { runuser -u postgres -- "$@"; }; else as_pg() { "$@"; }; fi
        as_pg "$BIN/pg_ctl" -D "$BASE/data" -m fast -w -t 60 stop >/dev/null || { say "pg_ctl stop failed"; exit 1; }
        say "stopped PostgreSQL on $BASE/.s.PGSQL.$PORT (MEM_TEST_PG_KEEP=1 make test keeps it running)"
    fi
    exit 0
fi
[ -z "${1:-}" ] || { say "usage: $0 [stop|stop-started]"; exit 2; }

if [ -z "$BIN" ]; then
    if [ "$(id -u)" != 0 ]; then
        say "PostgreSQL is not installed and we are not root; run: sudo apt-get install postgresql"
        exit 1
    fi
    say "installing postgresql (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || say "apt-get update failed; trying the install anyway"
    apt-get install -y -qq --no-install-recommends postgresql >&2
    BIN="$(pg_bindir)" || { say "postgresql installed but initdb/pg_ctl not found"; exit 1; }
fi

# PostgreSQL refuses to run as root: run the cluster as the postgres user then.
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    as_pg() { runuser -u postgres -- "$@"; }
    OWNER=postgres
else
    as_pg() { "$@"; }
    OWNER="$(id -un)"
fi

ready() { "$BIN/pg_isready" -q -h "$BASE" -p "$PORT" -d postgres >/dev/null 2>&1; }

psql_() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$BASE" -p "$PORT" -U mem -d postgres "$@"; }

if ! ready; then
    mkdir -p "$BASE"
    chown "$OWNER" "$BASE"
    chmod 700 "$BASE"
    if [ ! -s "$BASE/data/PG_VERSION" ]; then
        say "initdb in $BASE/data"
        rm -rf "$BASE/data"
        as_pg "$BIN/initdb" -D "$BASE/data" -U mem --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null 2>"$BASE/initdb.log" \
            || as_pg "$BIN/initdb" -D "$BASE/data" -U mem --auth=trust -E UTF8 --locale=C >/dev/null 2>>"$BASE/initdb.log" \
            || { cat "$BASE/initdb.log" >&2; exit 1; }
    fi
    say "starting PostgreSQL on $BASE/.s.PGSQL.$PORT"
    as_pg "$BIN/pg_ctl" -D "$BASE/data" -l "$BASE/server.log" -w -t 60 \
        -o "-c listen_addresses= -p $PORT -k $BASE -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
        start >/dev/null || { tail -n 20 "$BASE/server.log" >&2; exit 1; }
    for _ in $(seq 1 50); do ready && break; sleep 0.1; done
    ready || { say "the server did not become ready"; tail -n 20 "$BASE/server.log" >&2; exit 1; }
    # started for `make test` (MEM_TEST_PG_MARK=1): its stop-started stops it after the tests
    if [ -n "${MEM_TEST_PG_MARK:-}" ]; then touch "$BASE/started-by-ci-postgres"; fi
fi

if [ "$(psql_ -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
    psql_ -c "CREATE DATABASE $DB" >/dev/null
fi
echo "$URL"
