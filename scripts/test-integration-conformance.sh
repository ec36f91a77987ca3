#!/usr/bin/env bash
# Conformance integration tests: the Lease watcher against a real local
# kube-apiserver, and every scenario with real sink and reconciler processes
# on loopback (conformance/local). Binaries come from scripts/k8s-bins.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${FENCECHECK_KUBE_BIN_DIR:=$(bash scripts/k8s-bins.sh --apiserver-only)}"
export FENCECHECK_KUBE_BIN_DIR
# The local target runs one scenario per kind of fault and a control of each
# kind of evidence here, three at a time (FENCECHECK_LOCAL_PARALLEL), to keep
# `make test` inside CI's budget; every scenario runs on the cluster in
# `make conformance`, and FENCECHECK_LOCAL_SCENARIOS=. runs all 36 locally
# (405 s at three at a time on the slower machine, 748 of 748 as expected).
: "${FENCECHECK_LOCAL_SCENARIOS:=^(partition-heal|stale-leader-keeps-writing|shutdown-under-load|neg-live-epoch|neg-no-drain-witnessed|neg-deep-bridge|neg-lying-sink|held-writes|neg-racy-sink|lost-answers|sink-crash|neg-forget-floor-sink-crash|pause-leader|lease-deleted|planned-handover|neg-slow-failover|sink-slow|neg-idempotency-misuse)\$}"
export FENCECHECK_LOCAL_SCENARIOS
echo "local target scenarios: FENCECHECK_LOCAL_SCENARIOS=$FENCECHECK_LOCAL_SCENARIOS"
# Only the integration-tagged tests: make unit ran the rest.
exec bash scripts/go-test.sh integration-conformance -tags integration -count=1 -timeout 20m \
	-run "$(bash -c 'source scripts/lib/common.sh && integration_run conformance')" ./conformance/...
