#!/usr/bin/env bash
# Conformance integration tests: the Lease watcher against a real local
# kube-apiserver, and every scenario with real sink and reconciler processes
# on loopback (conformance/local). Binaries come from scripts/k8s-bins.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${FENCECHECK_KUBE_BIN_DIR:=$(bash scripts/k8s-bins.sh)}"
export FENCECHECK_KUBE_BIN_DIR
exec go test -tags integration -count=1 -timeout 20m ./conformance/...
