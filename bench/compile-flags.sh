#!/usr/bin/env bash
# bench/compile-flags.sh: what a compiler setting saves on the node's build.
# Compiles the same packages of the node module (scripts/nodeimage/modules/
# node) from an empty build cache once per variant, in the same run, with
# k8s-bins.sh's flags, and prints each variant's wall and CPU time as a ratio
# to the first (base: the flags k8s-bins.sh used before nodwarf was adopted):
#   base      -trimpath, the tags, -ldflags "-s -w"
#   nodwarf   base + -gcflags=all=-dwarf=false (no debug info the strip drops anyway)
#   gogc      nodwarf with GOGC=400 for the compiler (fewer collections, more memory)
#   c1        nodwarf, each compile on one thread (-c=1; go build already runs
#             one compile per core)
#   noinl     nodwarf without inlining (-l): slower binaries, measured only
#   noopt     nodwarf without optimization or inlining (-N -l): ditto
#
#   --pkgs "P..."   the packages (default: k8s.io/client-go/kubernetes
#                   k8s.io/apiserver/pkg/server)
#   --variants "V..." which variants, in order (default: base nodwarf gogc)
#
# Modules missing from the module cache are downloaded first, outside the timing.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
# common.sh turns DWARF off for every build; the variants set it themselves.
GOFLAGS=${GOFLAGS//$NO_DWARF/}

PKGS="k8s.io/client-go/kubernetes k8s.io/apiserver/pkg/server" VARIANTS="base nodwarf gogc"
while [ $# -gt 0 ]; do
	case "$1" in
	--pkgs) PKGS=${2:?--pkgs needs packages}; shift ;;
	--variants) VARIANTS=${2:?--variants needs names}; shift ;;
	-h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
	shift
done

echo "MACHINE $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"
work=$(mktemp -d /tmp/fc-compile-flags.XXXX)
trap 'rm -rf "$work"' EXIT
tags=selinux,grpcnotrace,no_aufs,no_zfs,no_btrfs,no_devmapper
node="$FENCECHECK_ROOT/scripts/nodeimage/modules/node"
# Downloads are not what we measure: fetch the packages' modules first.
(cd "$node" && GOCACHE="$work/gocache" go list -deps -mod=mod -tags "$tags" $PKGS >/dev/null) ||
	die "go list of $PKGS failed (module downloads?)"
first=""
for v in $VARIANTS; do
	flags=(-trimpath -mod=mod -tags "$tags" -ldflags "-s -w") env=()
	case "$v" in
	base) ;;
	nodwarf) flags+=("$NO_DWARF") ;;
	gogc) flags+=("$NO_DWARF") env=(GOGC=400) ;;
	c1) flags+=("$NO_DWARF -c=1") ;;
	noinl) flags+=("$NO_DWARF -l") ;;
	noopt) flags+=("$NO_DWARF -N -l") ;;
	*) die "unknown variant $v (base, nodwarf, gogc, c1, noinl, noopt)" ;;
	esac
	rm -rf "$work/gocache"
	t=$(now)
	# CPU of the go command and its compiles: bash's time, user + sys of
	# the waited-for children.
	TIMEFORMAT='%U %S'
	{ time (cd "$node" &&
		env GOCACHE="$work/gocache" CGO_ENABLED=0 "${env[@]}" go build "${flags[@]}" -o /dev/null $PKGS); } 2>"$work/time" ||
		die "go build ($v) failed: $(cat "$work/time")"
	cpu=$(tail -n1 "$work/time" | awk '{printf "%.1f", $1 + $2}')
	wall=$(secs "$t" "$(now)")
	[ -n "$first" ] || first="$wall $cpu"
	read -r w0 c0 <<<"$first"
	echo "RESULT $v wall_s $wall cpu_s $cpu  ratio wall $(awk -v a="$wall" -v b="$w0" 'BEGIN{printf "%.3f", a/b}') cpu $(awk -v a="$cpu" -v b="$c0" 'BEGIN{printf "%.3f", a/b}')"
done
