#!/usr/bin/env bash
# Integration tests of the sink's PostgreSQL backend (and certify against it).
#
#   scripts/test-integration-sink.sh            install/start PostgreSQL, run the tests, stop it
#   scripts/test-integration-sink.sh --start-pg install/start only; prints `export FENCECHECK_PG_DSN=...`
#   scripts/test-integration-sink.sh --stop-pg  stop the server this script started
#
# PostgreSQL comes from Debian's packages (apt-get install postgresql) when
# initdb is missing, runs as the postgres user from its own data directory on
# a loopback port (no systemd), and is reused when it is already running.
# Env: FENCECHECK_PG_PORT (25432: below the kernel's ephemeral range, which
# starts at 32768, so no outgoing connection can hold it), FENCECHECK_PG_DIR (/var/tmp/fencecheck-postgres),
# FENCECHECK_PG_KEEP=1 keeps the server running after the tests.
# FENCECHECK_CALIBRATE=20 also runs the concurrency calibration (each race
# control, bbolt and PostgreSQL, certified 20 times; at least 19 caught).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
. scripts/lib/common.sh

PG_PORT="${FENCECHECK_PG_PORT:-25432}"
PG_DIR="${FENCECHECK_PG_DIR:-/var/tmp/fencecheck-postgres}"
PG_DATA="$PG_DIR/data"
PG_RUN="$PG_DIR/run"
PG_LOG="$PG_DIR/postgres.log"
PG_DB=fencecheck
export FENCECHECK_PG_DSN="postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable"

pg_bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	[ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

install_pg() {
	if pg_bindir >/dev/null; then return 0; fi
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || die "PostgreSQL server binaries are missing and this is not Debian as root: install postgresql"
	log "PostgreSQL server not installed: apt-get update && apt-get install -y postgresql"
	mkdir -p "$FENCECHECK_CACHE/logs"
	apt-get update -qq >>"$FENCECHECK_CACHE/logs/apt.log" 2>&1 || die "apt-get update failed (see $FENCECHECK_CACHE/logs/apt.log)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >>"$FENCECHECK_CACHE/logs/apt.log" 2>&1 ||
		die "apt-get install postgresql failed (see $FENCECHECK_CACHE/logs/apt.log)"
	pg_bindir >/dev/null || die "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
}

as_pg() { runuser -u postgres -- "$@"; }

start_pg() {
	install_pg
	local bin; bin=$(pg_bindir)
	id postgres >/dev/null 2>&1 || die "no postgres user (the postgresql package creates it)"
	mkdir -p "$PG_DIR" "$PG_RUN"
	chown postgres:postgres "$PG_DIR" "$PG_RUN"
	if [ ! -f "$PG_DATA/PG_VERSION" ]; then
		log "initdb $PG_DATA"
		rm -rf "$PG_DATA"
		as_pg "$bin/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 || { tail -20 "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
	fi
	if as_pg "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
		log "PostgreSQL already running from $PG_DATA"
	else
		log "starting PostgreSQL on 127.0.0.1:$PG_PORT (log $PG_LOG)"
		touch "$PG_LOG" && chown postgres:postgres "$PG_LOG"
		as_pg "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 \
			-o "-p $PG_PORT -k $PG_RUN -c listen_addresses=127.0.0.1" start >/dev/null ||
			{ tail -20 "$PG_LOG" >&2; die "PostgreSQL did not start within 60s"; }
	fi
	local deadline=$(( $(date +%s) + 60 ))
	until "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; do
		[ "$(date +%s)" -lt "$deadline" ] || { tail -20 "$PG_LOG" >&2; die "PostgreSQL not ready on port $PG_PORT within 60s"; }
		sleep 0.5
	done
	if ! "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname='$PG_DB'" | grep -q 1; then
		log "creating database $PG_DB"
		"$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$PG_DB"
	fi
	log "PostgreSQL ready: $FENCECHECK_PG_DSN"
}

stop_pg() {
	local bin; bin=$(pg_bindir) || return 0
	[ -f "$PG_DATA/PG_VERSION" ] || return 0
	if as_pg "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
		log "stopping PostgreSQL"
		as_pg "$bin/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null
	fi
}

case "${1:-}" in
--start-pg) start_pg; echo "export FENCECHECK_PG_DSN='$FENCECHECK_PG_DSN'"; exit 0 ;;
--stop-pg) stop_pg; exit 0 ;;
"") ;;
*) die "unknown argument $1 (use --start-pg, --stop-pg or nothing)" ;;
esac

step "PostgreSQL" start_pg
[ "${FENCECHECK_PG_KEEP:-}" = 1 ] || trap stop_pg EXIT
step "go test -tags integration (sink, certify)" \
	env -u FENCECHECK_CALIBRATE go test -tags integration -count=1 ./fixtures/sink/... ./certify/...
if [ -n "${FENCECHECK_CALIBRATE:-}" ]; then
	# -v so that the "caught N of M" figures are printed
	step "concurrency calibration ($FENCECHECK_CALIBRATE runs per race control)" \
		go test -tags integration -count=1 -v -run '^TestCalibrate' ./certify/
fi
