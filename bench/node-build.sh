#!/usr/bin/env bash
# bench/node-build.sh: run the node's one `go build` (scripts/k8s-bins.sh)
# from an empty build cache and an empty $FENCECHECK_CACHE, with go's action
# graph, and print where its wall time went (cmd/buildprofile): compile CPU
# per module and per command, each link, the tail after the last compile,
# the wall against the CPU floor on this machine's cores.
#
#   --cold-modules  also start from an empty module cache, so the figure
#                   includes downloading every module from the proxy
#   --graph FILE    keep the action graph in FILE (default: a temporary file)
#   --top N         modules to list (default 15)
#
# Long: about 20 min on 2 cores. Nothing it builds is kept.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"

COLD_MODULES=0 GRAPH="" TOP=15
while [ $# -gt 0 ]; do
	case "$1" in
	--cold-modules) COLD_MODULES=1 ;;
	--graph) GRAPH=${2:?--graph needs a file}; shift ;;
	--top) TOP=${2:?--top needs a number}; shift
		[[ "$TOP" =~ ^[0-9]+$ ]] || die "--top needs a number, got '$TOP'" ;;
	-h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
	shift
done

work=$(mktemp -d /tmp/fc-node-build.XXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
[ -n "$GRAPH" ] || GRAPH="$work/actiongraph.json"
# The profiler is built before the clock starts, with the caller's caches.
go build -o "$work/buildprofile" "$FENCECHECK_ROOT/cmd/buildprofile"

export GOCACHE="$work/gocache"
[ "$COLD_MODULES" = 0 ] || export GOMODCACHE="$work/gomodcache"
log "node-build: empty build cache $GOCACHE; module cache $(go env GOMODCACHE)"
s=$(date +%s)
FENCECHECK_CACHE="$work/cache" K8S_BINS_ACTIONGRAPH="$GRAPH" \
	bash "$FENCECHECK_ROOT/scripts/k8s-bins.sh" >/dev/null
log "node-build: k8s-bins.sh took $(( $(date +%s) - s ))s (module download included)"
"$work/buildprofile" --top "$TOP" "$GRAPH"
