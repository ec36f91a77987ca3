#!/usr/bin/env bash
# conformance-local.sh: `make conformance TARGET=local`. Builds etcd and
# kube-apiserver alone (scripts/k8s-bins.sh --apiserver-only) and, beside
# that build at a lower priority, our commands (fencecheck, sink, witness,
# reconciler), then runs `fencecheck run --target local ARGS...` with both.
# The apiserver build leaves cores idle while it downloads modules and links;
# ours fills them, so a cold machine gets its first verdict sooner.
#
# ARGS are `fencecheck run` flags (--scenarios RE, --seed N, --reports DIR);
# with --help or --list nothing but fencecheck is built. Progress on stderr;
# our build's output in $FENCECHECK_CACHE/logs/local-build.log.
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

# go_build PREFIX... -- CMD...: go build our commands into $bins (PREFIX: nice).
go_build() {
	local pre=() pkgs=()
	while [ "$1" != -- ]; do pre+=("$1"); shift; done
	shift
	for c in "$@"; do pkgs+=("./cmd/$c"); done
	(cd "$FENCECHECK_ROOT" && "${pre[@]}" go build -o "$bins/" "${pkgs[@]}")
}

if [ -n "${NO_APISERVER:-}" ]; then
	go_build -- fencecheck
	rc=0
	"$bins/fencecheck" run --target local "$@" || rc=$?
	exit "$rc"
fi

ourlog="$FENCECHECK_CACHE/logs/local-build.log"
log "building ${OURS[*]} beside etcd and kube-apiserver, at a lower priority (log $ourlog)"
s=$(date +%s)
go_build nice -n 10 -- "${OURS[@]}" >"$ourlog" 2>&1 &
ours=$!
kube=$(bash "$FENCECHECK_ROOT/scripts/k8s-bins.sh" --apiserver-only) || {
	pkill -P "$ours" 2>/dev/null; kill "$ours" 2>/dev/null || true
	die "building etcd and kube-apiserver failed (above)"
}
kill -0 "$ours" 2>/dev/null && log "etcd and kube-apiserver ready; waiting for ${OURS[*]}"
rc=0
wait "$ours" || rc=$?
if [ "$rc" != 0 ]; then
	tail -n 25 "$ourlog" >&2
	die "go build of ${OURS[*]} failed (exit $rc; log $ourlog)"
fi
log "${OURS[*]} built in $(( $(date +%s) - s ))s"
rc=0
FENCECHECK_KUBE_BIN_DIR=$kube "$bins/fencecheck" run --target local --bin-dir "$bins" "$@" || rc=$?
exit "$rc"
