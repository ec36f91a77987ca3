#!/usr/bin/env bash
# bench/suite.sh [REPORT_DIR | -- CONFORMANCE_ARGS...]: the conformance
# suite's wall time per scenario against the sum of the waits it cannot
# avoid (partition lengths, a lease TTL per leader deletion or restart,
# chaos schedule gaps, settling commits). Goal: active/unavoidable <= 1.2x.
#
# With REPORT_DIR, reads REPORT_DIR/history.json of a finished run. Without
# it, runs scripts/conformance.sh with the given arguments first and reads
# reports/latest. Prints a Markdown table and writes it to
# REPORT_DIR/timing.md.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$FENCECHECK_ROOT"

case "${1:-}" in
-h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if [ $# -ge 1 ] && [ "$1" != "--" ]; then
	DIR=$1
	[ -f "$DIR/history.json" ] || die "$DIR/history.json not found (a reports/<run-id> directory of a finished run)"
else
	[ "${1:-}" = "--" ] && shift
	step "conformance run" bash scripts/conformance.sh "$@" || log "the run failed; timing its history anyway"
	DIR=$(readlink -f reports/latest)
fi
go run ./cmd/fencecheck report --timing "$DIR" | tee "$DIR/timing.md"
