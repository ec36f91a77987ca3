#!/usr/bin/env bash
# conformance-local.sh: `make conformance TARGET=local`. Builds etcd and
# kube-apiserver alone (scripts/k8s-bins.sh --apiserver-only), then our
# commands (fencecheck, sink, witness, reconciler), then runs
# `fencecheck run --target local ARGS...` with both.
#
# The two builds run one after the other: side by side on 2 cores they only
# contend (measured slower, docs/kind.md). What overlaps is the network: our
# modules download while the apiserver compiles. Ours are built with the
# node build's flags (-trimpath, CGO off, GOFLAGS from common.sh), so the
# standard library and the modules both use at one version compile once.
#
# ARGS are `fencecheck run` flags (--scenarios RE, --seed N, --reports DIR);
# with --help or --list nothing but fencecheck is built. Progress on stderr;
# the module download's output in $FENCECHECK_CACHE/logs/local-download.log.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

OURS=(fencecheck sink witness reconciler)
for a in "$@"; do
	case "$a" in
	-h | -help | --help | -list | --list | -list=* | --list=*) NO_APISERVER=1 ;;
	esac
done

mkdir -p "$FENCECHECK_CACHE/logs"
bins=$(mktemp -d "$FENCECHECK_CACHE/local-bin.XXXX")
trap 'rm -rf "$bins"' EXIT

# go_build CMD...: build our commands into $bins.
go_build() {
	(cd "$FENCECHECK_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$bins/" "${@/#/./cmd/}")
}

if [ -n "${NO_APISERVER:-}" ]; then
	go_build fencecheck
	rc=0
	"$bins/fencecheck" run --target local "$@" || rc=$?
	exit "$rc"
fi

dl="$FENCECHECK_CACHE/logs/local-download.log"
# go list loads the packages, so it fetches exactly the modules they need.
(cd "$FENCECHECK_ROOT" && nice -n 10 go list -deps "${OURS[@]/#/./cmd/}" >/dev/null) >"$dl" 2>&1 &
fetch=$!
kube=$(bash "$FENCECHECK_ROOT/scripts/k8s-bins.sh" --apiserver-only) || {
	kill "$fetch" 2>/dev/null || true
	die "building etcd and kube-apiserver failed (above)"
}
wait "$fetch" || log "downloading our modules beside the apiserver build failed (log $dl); go build retries them"
step "go build ${OURS[*]}" go_build "${OURS[@]}"
rc=0
FENCECHECK_KUBE_BIN_DIR=$kube "$bins/fencecheck" run --target local --bin-dir "$bins" "$@" || rc=$?
exit "$rc"
