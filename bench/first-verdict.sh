#!/usr/bin/env bash
# bench/first-verdict.sh: how long a newcomer waits for the first verdict
# from a fresh clone: `make conformance TARGET=local` with one scenario, in
# a clone of HEAD, from empty caches (FENCECHECK_CACHE, Go build cache and
# module cache: modules come from the proxy again), so etcd and
# kube-apiserver are built from nothing. No docker, no cluster.
#
#   --scenarios RE  the scenarios of the run (default ^partition-heal$)
#   --warm-modules  keep the module cache (only the compiles are cold)
#
# Prints the machine, a 15-second CPU calibration (bench/calibrate.sh),
# then RESULT lines: the apiserver-only build, our commands' build after
# it, the time to the first verdict line, and the whole run; then PROFILE
# lines: where the apiserver build's time went (cmd/buildprofile).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"

SCENARIOS='^partition-heal$' WARM_MODULES=0
while [ $# -gt 0 ]; do
	case "$1" in
	--scenarios) SCENARIOS=${2:?--scenarios needs a regexp}; shift ;;
	--warm-modules) WARM_MODULES=1 ;;
	-h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
	shift
done

echo "MACHINE $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"
bash "$FENCECHECK_ROOT/bench/calibrate.sh"

tmp=$(mktemp -d /tmp/fc-first-verdict.XXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# The profiler is built before the clock starts, with the caller's caches.
go build -o "$tmp/buildprofile" "$FENCECHECK_ROOT/cmd/buildprofile"
git clone -q --no-hardlinks "$FENCECHECK_ROOT" "$tmp/clone"
export FENCECHECK_CACHE="$tmp/cache" GOCACHE="$tmp/gocache" GOFLAGS="-modcacherw ${GOFLAGS:-}" K8S_BINS_ACTIONGRAPH="$tmp/actiongraph.json"
[ "$WARM_MODULES" = 1 ] || export GOMODCACHE="$tmp/gomod"
log "first verdict: clone $tmp/clone ($(git -C "$tmp/clone" rev-parse --short HEAD)), empty caches$([ "$WARM_MODULES" = 1 ] && echo ' but the module cache'); log $tmp/run.log"
# make expands $ in a variable's value: the regexp's go through as $$.
re=${SCENARIOS//\$/\$\$}
t0=$(now)
# Each output line gets the seconds since t0, so the steps can be read off.
(cd "$tmp/clone" && make conformance TARGET=local CONFORMANCE_ARGS="--scenarios '$re' --reports $tmp/reports" 2>&1) |
	while IFS= read -r line; do printf '%s %s\n' "$(secs "$t0" "$(now)")" "$line"; done | tee "$tmp/run.log" >&2 || true
rc=$(grep -c 'offline re-check: exit 0' "$tmp/run.log" || true)
apiserver=$(awk '/k8s-bins: done/ {print $1; exit}' "$tmp/run.log")
ours=$(sed -n 's/.*<== go build fencecheck.* done in \([0-9]*\)s$/\1/p' "$tmp/run.log" | head -n1)
first=$(awk '/\[1\/[0-9]+\]/ {print $1; exit}' "$tmp/run.log")
total=$(tail -1 "$tmp/run.log" | cut -d' ' -f1)
echo "RESULT apiserver_only_build_s ${apiserver:-none}"
echo "RESULT ours_build_s ${ours:-none} (after the apiserver build, modules fetched beside it)"
echo "RESULT first_verdict_s ${first:-none}"
echo "RESULT whole_run_s $total"
"$tmp/buildprofile" --top 8 "$tmp/actiongraph.json" | sed 's/^/PROFILE /' || log "no profile of the apiserver build"
[ -n "$first" ] && [ "$rc" -ge 1 ] || die "no verdict, or the re-check failed: see the log above"
