#!/usr/bin/env bash
# Conformance integration tests: the Lease watcher against a real local
# kube-apiserver, and every scenario with real sink and reconciler processes
# on loopback (conformance/local). Binaries come from scripts/k8s-bins.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${FENCECHECK_KUBE_BIN_DIR:=$(bash scripts/k8s-bins.sh --apiserver-only)}"
export FENCECHECK_KUBE_BIN_DIR
# The local target runs one scenario per kind of fault and a control of each
# kind of evidence here, to keep `make test` inside CI's budget; every
# scenario runs on the cluster in `make conformance`, and
# FENCECHECK_LOCAL_SCENARIOS=. runs all of them locally (about 12 minutes).
: "${FENCECHECK_LOCAL_SCENARIOS:=^(partition-heal|stale-leader-keeps-writing|shutdown-under-load|neg-live-epoch|neg-no-drain-witnessed|neg-deep-bridge|neg-lying-sink|held-writes|neg-racy-sink|lost-answers|sink-crash|neg-forget-floor-sink-crash|pause-leader|lease-deleted|planned-handover|neg-slow-failover|sink-slow|neg-idempotency-misuse)\$}"
export FENCECHECK_LOCAL_SCENARIOS
echo "local target scenarios: FENCECHECK_LOCAL_SCENARIOS=$FENCECHECK_LOCAL_SCENARIOS"
exec go test -tags integration -count=1 -timeout 20m ./conformance/...
