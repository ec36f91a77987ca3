#!/usr/bin/env bash
# Host-level integration tests: each area's script installs and starts what
# it needs (a local kube-apiserver, PostgreSQL, network namespaces).
# Every area runs even if an earlier one failed; the exit code reports all.
#
# The conformance area (the local scenarios, three at a time) is the longest
# and mostly waits on leases and timers, so it runs beside the others, which
# run one after another: each area starts its own apiservers and sinks on
# free ports, only the others install packages (apt's lock), and the one
# shared build, k8s-bins.sh, takes a lock. Its output follows when it ends.
set -uo pipefail
cd "$(dirname "$0")/.."
BESIDE=conformance
failed=()

# area NAME SCRIPT: run one area, say how it ended; the exit code is its own.
area() {
	local t0 rc=0
	t0=$(date +%s)
	bash "$2" || rc=$?
	if [ "$rc" = 0 ]; then
		echo "== integration: $1 passed in $(( $(date +%s) - t0 ))s"
	else
		echo "== integration: $1 FAILED after $(( $(date +%s) - t0 ))s" >&2
	fi
	return "$rc"
}

log=$(mktemp "/tmp/fc-integration-$BESIDE.XXXX")
echo "== integration: $BESIDE, beside the others (its output follows when it ends; meanwhile in $log)"
# Its own session, so that an interrupt can stop the whole area.
setsid bash -c "$(declare -f area); area $BESIDE scripts/test-integration-$BESIDE.sh" >"$log" 2>&1 &
beside_pid=$!
trap 'kill -- -"$beside_pid" 2>/dev/null; exit 130' INT TERM

for script in scripts/test-integration-*.sh; do
	name=${script#scripts/test-integration-}
	name=${name%.sh}
	[ "$name" != "$BESIDE" ] || continue
	echo "== integration: $name"
	area "$name" "$script" || failed+=("$name")
done
echo "== integration: waiting for $BESIDE"
wait "$beside_pid" || failed+=("$BESIDE")
trap - INT TERM
cat "$log"
rm -f "$log"
if [ ${#failed[@]} -gt 0 ]; then
	echo "test-integration: failed: ${failed[*]}" >&2
	exit 1
fi
