#!/usr/bin/env bash
# images.sh NAME|./PKG...: for each NAME build image fencecheck/NAME:dev from the
# static binary ./cmd/NAME (CGO_ENABLED=0, -trimpath; ENTRYPOINT /NAME,
# scratch-based: just the binary); a package path ./PKG (e.g.
# ./examples/crcontroller) builds fencecheck/<its last element>:dev. A ./PKG
# with no Go files but an executable image.sh is built by that script
# (image.sh --imgbuild BIN --out FILE --tag REF): ./examples/nodecontroller,
# in Node.js, also named `nodecontroller`. Write the archive to
# $FENCECHECK_CACHE/images/NAME.tar and load it into the kind cluster
# ($KIND_CLUSTER_NAME): the archives are merged into one and loaded with one
# `kind load image-archive` (one import per node, not one per image).
#   --no-load   only build the archives (no cluster needed)
#   --no-build  only load the archives an earlier --no-load built
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

LOAD=1 BUILD=1
NAMES=()
for a in "$@"; do
	case "$a" in
	-h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--no-load) LOAD=0 ;;
	--no-build) BUILD=0 ;;
	-*) die "unknown flag: $a (try --help)" ;;
	*) NAMES+=("$a") ;;
	esac
done
[ ${#NAMES[@]} -gt 0 ] || die "usage: images.sh [--no-load | --no-build] NAME... (try --help)"
[ "$LOAD$BUILD" != 00 ] || die "--no-load and --no-build together leave nothing to do"

OUT="$FENCECHECK_CACHE/images"
declare -A PKG=() SCRIPT=()
for i in "${!NAMES[@]}"; do
	a=${NAMES[$i]} n=$a pkg=./cmd/$a
	# A bare name with no ./cmd/NAME but an example built by its image.sh.
	[[ "$a" == ./* || -d "$FENCECHECK_ROOT/cmd/$a" || ! -x "$FENCECHECK_ROOT/examples/$a/image.sh" ]] || pkg=./examples/$a
	if [[ "$a" == ./* ]]; then
		pkg=${a%/} n=${pkg##*/}
		[[ "$pkg" =~ ^\./[A-Za-z0-9_/.-]+$ && "$pkg" != *..* ]] || die "bad package path '$a' (./dir/under/the/repo)"
	fi
	[[ "$n" =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "bad image name '$n' (lowercase letters, digits, dashes)"
	if ! compgen -G "$FENCECHECK_ROOT/${pkg#./}/*.go" >/dev/null; then
		[ -x "$FENCECHECK_ROOT/${pkg#./}/image.sh" ] ||
			die "$pkg has no Go files and no executable image.sh under $FENCECHECK_ROOT: cannot build fencecheck/$n:dev"
		SCRIPT[$n]="$FENCECHECK_ROOT/${pkg#./}/image.sh"
	fi
	NAMES[$i]=$n PKG[$n]=$pkg
done

build_one() {
	local n=$1 pkg=${PKG[$1]}
	if [ -n "${SCRIPT[$n]:-}" ]; then
		"${SCRIPT[$n]}" --imgbuild "$OUT/bin/imgbuild" --out "$OUT/$n.tar" --tag "docker.io/fencecheck/$n:dev" ||
			die "${SCRIPT[$n]} failed"
		return
	fi
	(cd "$FENCECHECK_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/bin/$n" "$pkg") ||
		die "go build $pkg failed"
	"$OUT/bin/imgbuild" image --tag "docker.io/fencecheck/$n:dev" --out "$OUT/$n.tar" \
		--add "$OUT/bin/$n:/$n" --entrypoint "/$n"
}

# roll_chaos_agent: apply this tree's agent manifests first (a new binary
# may need a new DaemonSet spec or CRD: flags, mounts, kinds), then restart
# the DaemonSet so it runs the reloaded image.
roll_chaos_agent() {
	local f
	for f in "$FENCECHECK_ROOT"/manifests/chaos/*.yaml; do
		docker exec -i "$(control_plane_container)" kubectl --kubeconfig /etc/kubernetes/admin.conf \
			apply --server-side --force-conflicts --field-manager=fencecheck -f - <"$f" >&2 || return 1
	done
	node_kubectl -n fencecheck-system rollout restart ds/chaos-agent >/dev/null &&
		node_kubectl -n fencecheck-system rollout status ds/chaos-agent --timeout=120s >&2
}

# load_all: every archive merged into one, imported once into each node.
load_all() {
	local n archives=() merged="$OUT/load.tar" # under kind.lock: one loader at a time
	for n in "${NAMES[@]}"; do
		[ -f "$OUT/$n.tar" ] || die "$OUT/$n.tar is missing: build it first (images.sh --no-load $n)"
		archives+=("$OUT/$n.tar")
	done
	"$OUT/bin/imgbuild" archive --out "$merged" "${archives[@]}" || die "imgbuild archive failed"
	"$KIND" load image-archive "$merged" --name "$KIND_CLUSTER_NAME" >&2 || { rm -f "$merged"; return 1; }
	rm -f "$merged"
}

main() {
	mkdir -p "$OUT/bin"
	if [ "$BUILD" = 1 ] || [ ! -x "$OUT/bin/imgbuild" ]; then
		step "build imgbuild" bash -c "cd '$FENCECHECK_ROOT' && CGO_ENABLED=0 go build -trimpath -o '$OUT/bin/imgbuild' ./cmd/imgbuild"
	fi
	local n
	if [ "$BUILD" = 1 ]; then
		for n in "${NAMES[@]}"; do step "image fencecheck/$n:dev from ${PKG[$n]}" build_one "$n"; done
	fi
	[ "$LOAD" = 1 ] || { log "archives in $OUT (not loaded: --no-load)"; return 0; }
	docker info >/dev/null 2>&1 || die "docker is not running: run 'make kind-up' first"
	ensure_kind_cli
	[ -n "$(node_containers)" ] || die "kind cluster '$KIND_CLUSTER_NAME' does not exist: run 'make kind-up' first"
	step "kind load ${NAMES[*]} (one archive)" load_all
	# The tag stays :dev, so a running DaemonSet keeps its old binary: roll the
	# chaos agent (the only long-lived workload; suites deploy the rest fresh).
	if [[ " ${NAMES[*]} " == *" chaos-agent "* ]] &&
		node_kubectl -n fencecheck-system get ds/chaos-agent >/dev/null 2>&1; then
		step "roll out the reloaded chaos-agent" roll_chaos_agent
	fi
}

# Loading touches the cluster: serialize with kind-up/kind-down.
if [ "$LOAD" = 1 ]; then with_lock "$FENCECHECK_CACHE/kind.lock" main; else main; fi
exit
