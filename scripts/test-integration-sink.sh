#!/usr/bin/env bash
# Integration tests of the sink's PostgreSQL backend (and certify against it).
#
#   scripts/test-integration-sink.sh            install/start PostgreSQL, run the tests, stop it
#   scripts/test-integration-sink.sh --start-pg install/start only; prints `export FENCECHECK_PG_DSN=...`
#   scripts/test-integration-sink.sh --stop-pg  stop the server this script started
#
# PostgreSQL comes from Debian's packages (apt-get install postgresql) when
# initdb is missing, runs as the postgres user from its own data directory
# (no systemd), listens on a unix socket only (no TCP: nothing else on the
# machine can reach it), in a directory only postgres and root may enter, and
# takes a password (scram-sha-256, random, kept 0600 in the data directory's
# parent). It is reused when it is already running, and stopped whenever the
# script ends, also when it fails half-way (unless FENCECHECK_PG_KEEP=1).
# Env: FENCECHECK_PG_PORT (25432: names the socket file), FENCECHECK_PG_DIR
# (/var/tmp/fencecheck-pg-sock), FENCECHECK_PG_KEEP=1 keeps the server
# running after the tests.
# FENCECHECK_CALIBRATE=20 also runs the concurrency calibration (each race
# control, bbolt and PostgreSQL, certified 20 times; at least 19 caught).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
. scripts/lib/common.sh

PG_PORT="${FENCECHECK_PG_PORT:-25432}"
PG_DIR="${FENCECHECK_PG_DIR:-/var/tmp/fencecheck-pg-sock}"
PG_DATA="$PG_DIR/data"
PG_RUN="$PG_DIR/run"
PG_LOG="$PG_DIR/postgres.log"
PG_PWFILE="$PG_DIR/password"
PG_DB=fencecheck

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

# pg_password prints the server's password, creating it on first use
# (random hex: safe inside a URL).
pg_password() {
	if [ ! -s "$PG_PWFILE" ]; then
		(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PG_PWFILE")
	fi
	cat "$PG_PWFILE"
}

# The DSN of the unix socket, with the password (pgx: host= names the
# socket directory).
pg_dsn() { echo "postgres://postgres:$(pg_password)@/$PG_DB?host=$PG_RUN&port=$PG_PORT&sslmode=disable"; }

start_pg() {
	install_pg
	local bin; bin=$(pg_bindir)
	id postgres >/dev/null 2>&1 || die "no postgres user (the postgresql package creates it)"
	mkdir -p "$PG_DIR" "$PG_RUN"
	chown postgres:postgres "$PG_DIR" "$PG_RUN"
	chmod 0700 "$PG_DIR" "$PG_RUN"
	local pw; pw=$(pg_password)
	chown postgres:postgres "$PG_PWFILE"
	# A data directory from an older run (trust auth) is made afresh.
	if [ -f "$PG_DATA/PG_VERSION" ] && [ ! -f "$PG_DATA/fencecheck-scram" ]; then
		log "re-creating $PG_DATA with password authentication"
		as_pg "$bin/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null 2>&1 || true
		rm -rf "$PG_DATA"
	fi
	if [ ! -f "$PG_DATA/PG_VERSION" ]; then
		log "initdb $PG_DATA (scram-sha-256, unix socket only)"
		rm -rf "$PG_DATA"
		as_pg "$bin/initdb" -D "$PG_DATA" -U postgres --auth=scram-sha-256 --pwfile="$PG_PWFILE" -E UTF8 >"$PG_DIR/initdb.log" 2>&1 ||
			{ tail -20 "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
		as_pg touch "$PG_DATA/fencecheck-scram"
	fi
	if as_pg "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
		log "PostgreSQL already running from $PG_DATA"
	else
		log "starting PostgreSQL on the unix socket $PG_RUN/.s.PGSQL.$PG_PORT (log $PG_LOG)"
		touch "$PG_LOG" && chown postgres:postgres "$PG_LOG"
		as_pg "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 \
			-o "-p $PG_PORT -k $PG_RUN -c listen_addresses= -c password_encryption=scram-sha-256" start >/dev/null ||
			{ tail -20 "$PG_LOG" >&2; die "PostgreSQL did not start within 60s"; }
	fi
	local deadline=$(( $(date +%s) + 60 ))
	until "$bin/pg_isready" -q -h "$PG_RUN" -p "$PG_PORT"; do
		[ "$(date +%s)" -lt "$deadline" ] || { tail -20 "$PG_LOG" >&2; die "PostgreSQL not ready on $PG_RUN within 60s"; }
		sleep 0.5 # polling under a deadline
	done
	if ! PGPASSWORD=$pw "$bin/psql" -h "$PG_RUN" -p "$PG_PORT" -U postgres -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname='$PG_DB'" | grep -q 1; then
		log "creating database $PG_DB"
		PGPASSWORD=$pw "$bin/createdb" -h "$PG_RUN" -p "$PG_PORT" -U postgres "$PG_DB"
	fi
	# No password, no entry: the proof that the server is not on trust.
	if PGPASSWORD= "$bin/psql" -w -h "$PG_RUN" -p "$PG_PORT" -U postgres -d "$PG_DB" -Atc "SELECT 1" >/dev/null 2>&1; then
		die "PostgreSQL let a client in without a password"
	fi
	export FENCECHECK_PG_DSN; FENCECHECK_PG_DSN=$(pg_dsn)
	log "PostgreSQL ready on $PG_RUN (password in $PG_PWFILE)"
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
--start-pg)
	trap stop_pg EXIT # a start that fails half-way leaves nothing running
	start_pg
	trap - EXIT
	echo "export FENCECHECK_PG_DSN='$FENCECHECK_PG_DSN'"
	exit 0
	;;
--stop-pg) stop_pg; exit 0 ;;
"") ;;
*) die "unknown argument $1 (use --start-pg, --stop-pg or nothing)" ;;
esac

# Set before the start: a start that fails late (database, auth check)
# stops the server too.
[ "${FENCECHECK_PG_KEEP:-}" = 1 ] || trap stop_pg EXIT
step "PostgreSQL" start_pg
# Only the integration-tagged tests: make unit ran the rest.
step "go test -tags integration (sink, certify)" \
	env -u FENCECHECK_CALIBRATE bash scripts/go-test.sh integration-sink -tags integration -count=1 \
	-run "$(integration_run fixtures/sink certify)" ./fixtures/sink/... ./certify/...
if [ -n "${FENCECHECK_CALIBRATE:-}" ]; then
	# -v so that the "caught N of M" figures are printed
	step "concurrency calibration ($FENCECHECK_CALIBRATE runs per race control)" \
		go test -tags integration -count=1 -v -run '^TestCalibrate' ./certify/
fi
