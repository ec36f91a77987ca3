#!/usr/bin/env bash
# test-integration-reconciler.sh: the reconciler's integration tests against
# a real kube-apiserver + etcd run as local processes (internal/kubetest):
# racing takeovers, renew, expiry, Lease re-creation, RBAC least privilege,
# and two replicas across a cut apiserver connection.
# Needs the binaries from scripts/k8s-bins.sh (built once, then cached).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) echo "test-integration-reconciler.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac
if [ -z "${FENCECHECK_KUBE_BIN_DIR:-}" ]; then
	echo "test-integration-reconciler.sh: locating kube-apiserver and etcd (scripts/k8s-bins.sh)..." >&2
	FENCECHECK_KUBE_BIN_DIR="$(bash scripts/k8s-bins.sh --apiserver-only)"
fi
export FENCECHECK_KUBE_BIN_DIR
echo "test-integration-reconciler.sh: binaries in $FENCECHECK_KUBE_BIN_DIR" >&2
# Only the integration-tagged tests: make unit ran the rest.
exec bash scripts/go-test.sh integration-reconciler -tags integration -count=1 -timeout 15m \
	-run "$(bash -c 'source scripts/lib/common.sh && integration_run fixtures/reconciler internal/kubetest')" ./fixtures/reconciler/... ./internal/kubetest/...
