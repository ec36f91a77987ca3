#!/usr/bin/env bash
# bench/suite.sh [--parallel N] [--run-id ID] [-- CONFORMANCE_ARGS...]
# bench/suite.sh REPORT_DIR [REPORT_DIR...]
# The conformance suite at --parallel N (default: the suite's) and at
# --parallel 1, with the same seed, one after the other in this run; then
# side by side: wall time of all scenarios, the ratio to the longest
# scenario's unavoidable waits (goal <= 1.5x) and to their sum, deploy+
# collect per scenario, and the failover percentiles at both settings
# (parallel must not make them worse). Each run's per-scenario table is
# in its reports/<id>/timing.md. CONFORMANCE_ARGS go to
# scripts/conformance.sh (e.g. --kubeconfig F, --skip-images,
# -- --feature REGEX). With REPORT_DIRs, only compares finished runs.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
cd "$FENCECHECK_ROOT"

PAR=""
ID=bench-$(date -u +%Y%m%d-%H%M%S)
case "${1:-}" in
-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if [ $# -ge 1 ] && [ -d "$1" ]; then
	for d in "$@"; do [ -f "$d/history.json" ] || die "$d/history.json not found (a reports/<run-id> directory of a finished run)"; done
	go run ./cmd/fencecheck report --timing "$@"
	exit 0
fi
while [ $# -gt 0 ]; do
	case "$1" in
	--parallel) PAR=${2:?--parallel needs a number}; shift 2 ;;
	--run-id) ID=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ -z "$PAR" ] || [[ "$PAR" =~ ^[1-9][0-9]*$ ]] || die "--parallel must be a positive number, got '$PAR'"
if [ -z "$PAR" ]; then
	# The suite's default, named explicitly so the reports record it.
	PAR=$(sed -n 's/^const defaultParallel = \([0-9]*\)$/\1/p' conformance/suite/suite_test.go)
	[ -n "$PAR" ] || die "no 'const defaultParallel = N' in conformance/suite/suite_test.go"
fi
SEED=$(( $(date +%s%N) % 1000000 ))
dirs=()
# The parallel run first: it is the shorter, and its figures matter most.
for p in "$PAR" 1; do
	args=(--run-id "$ID-p$p" --seed "$SEED" --parallel "$p")
	step "suite at --parallel $p" bash scripts/conformance.sh "${args[@]}" "$@" || log "the run at --parallel $p failed; timing its history anyway"
	dir=reports/$ID-p$p
	[ -f "$dir/history.json" ] || die "$dir/history.json: the run recorded nothing"
	go run ./cmd/fencecheck report --timing "$dir" >"$dir/timing.md"
	dirs+=("$dir")
done
echo "bench/suite.sh: the same scenarios and seed at --parallel $PAR and 1:"
go run ./cmd/fencecheck report --timing "${dirs[@]}" | tee "reports/$ID-compare.md"
