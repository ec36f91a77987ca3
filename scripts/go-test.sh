#!/usr/bin/env bash
# go-test.sh NAME [go test flags and packages]: go test through gotestsum
# (pinned in tools/go.mod, built once into the cache), which keeps every
# test's event and time in reports/test-times/NAME.json (one file per area
# of `make test`, overwritten by the next run) for bench/slowest-tests.sh.
# The console shows each package's result and every failing test's output
# (-v in the flags: every test's output). If gotestsum cannot be built, it
# says so and runs plain go test: the tests still run, only the times are
# not kept.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
[ $# -ge 1 ] || die "usage: go-test.sh NAME [go test flags and packages]"
name=$1; shift
times="$FENCECHECK_ROOT/reports/test-times"
mkdir -p "$times"
if ! bin=$(gotestsum_bin); then
	log "gotestsum (tools/go.mod) did not build: plain go test, no test times kept for $name"
	exec go test "$@"
fi
format=pkgname-and-test-fails
for a in "$@"; do
	case "$a" in -v | -test.v | -v=true) format=standard-verbose ;; esac
done
exec "$bin" --format "$format" --jsonfile "$times/$name.json" -- "$@"
