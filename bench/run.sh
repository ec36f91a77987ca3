#!/usr/bin/env bash
# bench/run.sh: every benchmark, each reported as a ratio against a baseline
# measured in the same run (never as a pass/fail on a timer).
#   bridge   epoch bridge vs a bare channel (ns and allocs per envelope)
#   sink     fenced vs unfenced writes, bbolt and PostgreSQL
#   witness  sink writes through the witness vs direct (added p50/p99)
#   kind-up  warm kind-up vs a bare `kind create cluster` (add --cold via KINDUP_ARGS)
#   suite    conformance wall time vs its unavoidable waits (reads reports/latest;
#            bench/suite.sh alone runs --parallel 1 vs the default side by side)
#   node-build  only when named (about 20 min): the node's cold go build, its
#            wall against the CPU floor on this machine's cores, per module
# Usage: bench/run.sh [bridge|sink|witness|kind-up|suite|node-build]...
#        (default: all but node-build)
set -uo pipefail
cd "$(dirname "$0")"
case "${1:-}" in -h | --help) sed -n '2,13p' "$(basename "$0")" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
which=("$@")
[ ${#which[@]} -gt 0 ] || which=(bridge sink witness kind-up suite)
rc=0
for b in "${which[@]}"; do
	echo "== bench: $b"
	case "$b" in
	bridge) bash bridge.sh || rc=1 ;;
	sink) bash sink.sh || rc=1 ;;
	witness) bash witness.sh || rc=1 ;;
	kind-up) bash kind-up.sh ${KINDUP_ARGS:-} || rc=1 ;;
	node-build) bash node-build.sh || rc=1 ;;
	suite)
		# suite.sh works from the repository root: give it an absolute path.
		if [ -e ../reports/latest/history.json ]; then bash suite.sh "$(cd ../reports/latest && pwd -P)" || rc=1
		else echo "bench: no reports/latest yet: run 'make conformance' first" >&2; rc=1; fi ;;
	*) echo "bench: unknown benchmark '$b' (bridge, sink, witness, kind-up, suite, node-build)" >&2; exit 2 ;;
	esac
done
exit $rc
