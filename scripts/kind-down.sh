#!/usr/bin/env bash
# kind-down.sh: delete the project's kind cluster ($KIND_CLUSTER_NAME) and its
# kubeconfig. Leaves dockerd and the cached images alone.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

case "${1:-}" in
-h | --help) sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) die "unknown argument: $1 (try --help)" ;;
esac

main() {
	if ! docker info >/dev/null 2>&1; then
		log "docker is not running: no cluster to delete"
		return 0
	fi
	ensure_kind_cli
	step "kind delete cluster $KIND_CLUSTER_NAME" "$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >&2
	rm -f "$KUBECONFIG"
}

with_lock "$FENCECHECK_CACHE/kind.lock" main
exit
