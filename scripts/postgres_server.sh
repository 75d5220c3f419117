#!/usr/bin/env bash
# A PostgreSQL server of the project's own, for Dagster's run, event and schedule storage when run workers on
# several hosts (here: several containers) share one instance (deploy/dagster.yaml), and for its tests.
#
#   scripts/postgres_server.sh up        start the server unless it already answers; prints the DAGSTER_PG_* exports
#   scripts/postgres_server.sh down      stop it
#   scripts/postgres_server.sh run CMD   up, CMD with DAGSTER_PG_HOST/PORT/USER/PASSWORD/DB set, then down (only
#                                        if this call started it); CMD's exit code. Without Debian's packages (and
#                                        root to install them), CMD runs as it is (the Postgres tests then skip).
#
# Debian's `postgresql` (apt-get installs it where it is missing), never its system cluster: a data directory of its
# own (MCP_EVALS_PG_ROOT, /var/lib/mcp-evals-postgres), a socket directory of its own, TCP on 127.0.0.1 only, port
# MCP_EVALS_PG_PORT (54329), so it never meets another server. Connections over TCP need the password of the role
# `mcp_evals` (scram-sha-256), made at first start and kept in $ROOT/password (mode 0600): a run worker on the host's
# network logs in with it; nothing else on the host's loopback gets in without it. Agents never reach it: their
# boxes have no host loopback (the default box's own network namespace, the docker sandbox's --internal network).
set -euo pipefail

ROOT="${MCP_EVALS_PG_ROOT:-/var/lib/mcp-evals-postgres}"
PORT="${MCP_EVALS_PG_PORT:-54329}"
SOCKET_DIR="$ROOT/socket"
DATA="$ROOT/data"
PASSWORD_FILE="$ROOT/password"
LOGS="$ROOT/log"  # owned by the server's user
READY="$ROOT/ready"  # written once the role and its database exist
ROLE=mcp_evals

log() { printf '[postgres_server %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

bindir() {
    local found
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
    [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

# The server refuses to run as root: as root it runs as Debian's `postgres` user, otherwise as whoever calls.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

answers() {
    [ -f "$PASSWORD_FILE" ] || return 1
    PGPASSWORD="$(cat "$PASSWORD_FILE")" timeout 10 "$(bindir)/psql" -h 127.0.0.1 -p "$PORT" -U "$ROLE" \
        -d "$ROLE" -qAtc 'SELECT 1' >/dev/null 2>&1
}

install() {
    bindir >/dev/null && return 0
    [ "$(id -u)" = 0 ] || { log "no PostgreSQL and not root to install it"; return 3; }
    command -v apt-get >/dev/null 2>&1 || { log "no PostgreSQL and no apt-get"; return 3; }
    log "installing Debian's postgresql"
    (apt-get install -y -qq postgresql >/dev/null 2>&1 \
        || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq postgresql >/dev/null 2>&1)) \
        || { log "apt-get could not install postgresql"; return 3; }
    bindir >/dev/null || { log "postgresql installed, but no initdb under /usr/lib/postgresql"; return 3; }
}

init() {
    local bin pwfile
    bin="$(bindir)"
    rm -rf "$DATA" "$READY"
    mkdir -p "$DATA" "$SOCKET_DIR" "$LOGS"
    chmod 0755 "$ROOT"
    (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$PASSWORD_FILE")
    if [ "$(id -u)" = 0 ]; then chown postgres: "$DATA" "$SOCKET_DIR" "$LOGS"; fi
    chmod 0700 "$DATA"
    log "initializing $DATA"
    as_owner "$bin/initdb" -D "$DATA" --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
        >"$ROOT/initdb.log" 2>&1 || { tail -20 "$ROOT/initdb.log" >&2; return 3; }
    pwfile="$(mktemp)"
    printf "CREATE ROLE %s LOGIN CREATEDB PASSWORD '%s';\nCREATE DATABASE %s OWNER %s;\n" \
        "$ROLE" "$(cat "$PASSWORD_FILE")" "$ROLE" "$ROLE" > "$pwfile"
    chmod 0644 "$pwfile"
    start
    as_owner "$bin/psql" -h "$SOCKET_DIR" -p "$PORT" -d postgres -qf "$pwfile" >/dev/null \
        || { rm -f "$pwfile"; log "could not create the role $ROLE"; return 3; }
    rm -f "$pwfile"
    touch "$READY"
}

start() {
    local bin
    bin="$(bindir)"
    mkdir -p "$SOCKET_DIR" "$LOGS"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$SOCKET_DIR" "$LOGS"; fi
    log "starting PostgreSQL on 127.0.0.1:$PORT (data $DATA)"
    # -w: pg_ctl returns once the server accepts connections
    as_owner "$bin/pg_ctl" -D "$DATA" -l "$LOGS/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $SOCKET_DIR -c max_connections=200 -c fsync=off" start \
        >/dev/null || { tail -20 "$LOGS/server.log" >&2; return 3; }
}

running() { [ -f "$DATA/postmaster.pid" ] && as_owner "$(bindir)/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

up() {
    answers && return 0
    install || return 3
    mkdir -p "$ROOT"
    if [ -f "$READY" ]; then
        running || start || return 3
    else
        running && as_owner "$(bindir)/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1
        init || return 3
    fi
    answers || { log "the server does not answer on 127.0.0.1:$PORT; its log: $LOGS/server.log"; return 3; }
    log "server up"
}

down() {
    bindir >/dev/null || return 0
    running || return 0
    as_owner "$(bindir)/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true
    log "server stopped"
}

exports() {
    echo "export DAGSTER_PG_HOST=127.0.0.1 DAGSTER_PG_PORT=$PORT DAGSTER_PG_USER=$ROLE DAGSTER_PG_DB=$ROLE" \
         "DAGSTER_PG_PASSWORD=$(cat "$PASSWORD_FILE")"
}

run() {
    local started=0 status=0
    if ! answers; then
        if up; then started=1; else log "running without PostgreSQL: the Postgres tests will skip"; fi
    fi
    if answers; then
        DAGSTER_PG_HOST=127.0.0.1 DAGSTER_PG_PORT="$PORT" DAGSTER_PG_USER="$ROLE" DAGSTER_PG_DB="$ROLE" \
            DAGSTER_PG_PASSWORD="$(cat "$PASSWORD_FILE")" "$@" || status=$?
    else
        "$@" || status=$?
    fi
    if [ "$started" = 1 ]; then down; fi
    return "$status"
}

case "${1:-}" in
    up) up && exports ;;
    down) down ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 up|down|run CMD..." >&2; exit 2 ;;
esac
