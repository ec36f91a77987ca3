#!/usr/bin/env bash
# test-integration-chaos.sh: host-level proof of the chaos executor.
#  - chaos/netrules: network namespaces joined by veth pairs, real TCP
#    traffic, routes installed with netlink (established + new connections
#    cut, other traffic flows, heal, leftover cleanup).
#  - chaos/agent: the agent's node path on real namespaces.
#  - chaos: end to end against a real kube-apiserver run as local processes
#    (internal/kubetest, RBAC on): CRD + RBAC applied, the agent running as
#    its service account, Inject / WaitRecovered / Delete.
# Needs root; installs iproute2 if missing; the kube-apiserver and etcd
# binaries come from scripts/k8s-bins.sh (built once, then cached). The
# tests delete their namespaces even when they fail.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) echo "test-integration-chaos.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "test-integration-chaos.sh: needs root (network namespaces)" >&2
	exit 1
fi
if ! command -v ip >/dev/null; then
	echo "test-integration-chaos.sh: installing iproute2" >&2
	apt-get install -y iproute2 >/dev/null
fi
if [ -z "${FENCECHECK_KUBE_BIN_DIR:-}" ]; then
	echo "test-integration-chaos.sh: locating kube-apiserver and etcd (scripts/k8s-bins.sh)..." >&2
	FENCECHECK_KUBE_BIN_DIR="$(bash scripts/k8s-bins.sh --apiserver-only)"
fi
export FENCECHECK_KUBE_BIN_DIR
# Only the integration-tagged tests: make unit ran the rest.
exec bash scripts/go-test.sh integration-chaos -tags integration -count=1 -timeout 10m -v \
	-run "$(bash -c 'source scripts/lib/common.sh && integration_run chaos')" ./chaos/...
