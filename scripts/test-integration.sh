#!/usr/bin/env bash
# Host-level integration tests: each area's script installs and starts what
# it needs (a local kube-apiserver, PostgreSQL, network namespaces).
# Every area runs even if an earlier one failed; the exit code reports all.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
for script in scripts/test-integration-*.sh; do
	area=${script#scripts/test-integration-}
	area=${area%.sh}
	echo "== integration: $area"
	t0=$(date +%s)
	if bash "$script"; then
		echo "== integration: $area passed in $(( $(date +%s) - t0 ))s"
	else
		echo "== integration: $area FAILED after $(( $(date +%s) - t0 ))s" >&2
		failed+=("$area")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "test-integration: failed: ${failed[*]}" >&2
	exit 1
fi
