#!/usr/bin/env bash
# build.sh: build Chaos Mesh (chaos-controller-manager, chaos-daemon) from
# its Go module, our nsexec shim, and their images; print the output
# directory on stdout. Every input (module versions, this script, the shim,
# imgbuild and its go-containerregistry, the Go version, the root filesystem)
# goes into the output's hash, and nothing else (not our go.sum): a warm run
# with an existing output rebuilds nothing. Progress on stderr, long builds log to
# $FENCECHECK_CACHE/logs/ with a heartbeat.
#
# Output ($FENCECHECK_CACHE/chaos-mesh/<hash>/): bin/, crd.yaml (extracted
# from the module, 3 MB: never committed), and the image archives
# chaos-controller-manager.tar and chaos-daemon.tar (tags
# docker.io/fencecheck/chaos-*:dev), also copied to
# $FENCECHECK_CACHE/images/ beside our own images.
#
# The module's `replace .../api => ./api` needs the separately published api
# module in ./api of a writable copy, and the build runs from that copy's
# root (as a dependency of ours its replace directives would be lost). The
# controller builds with CGO off; the daemon with cgo (its BlockChaos client
# is C; it links against glibc, which the Debian root filesystem has). The
# daemon image reuses the node image's root filesystem (iptables, ipset,
# iproute2) if it is cached, else builds its own (mmdebstrap).
# FENCECHECK_CHAOS_MESH_SALT=x adds x to the hash (force a rebuild).
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/rootfs.sh"

case "${1:-}" in
-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) die "unknown argument: $1 (try --help)" ;;
esac

CM_MODULE=github.com/chaos-mesh/chaos-mesh
CM_VERSION=v0.9.1-0.20260902003049-47411975a8cb
DAEMON_PKGS=iptables,ipset,iproute2
HERE="$FENCECHECK_ROOT/scripts/chaos-mesh"
WORK="$FENCECHECK_CACHE/chaos-mesh"
mkdir -p "$WORK" "$FENCECHECK_CACHE/logs" "$FENCECHECK_CACHE/images"

# The api module version is the one our go.mod requires: the NetworkChaos
# types we create and the ones the controller decodes are the same code.
api_version() {
	(cd "$FENCECHECK_ROOT" && go list -m -f '{{.Version}}' "$CM_MODULE/api")
}

ggcr_version() {
	(cd "$FENCECHECK_ROOT" && go list -m -f '{{.Version}}' github.com/google/go-containerregistry)
}

# source_tree DIR: a writable copy of the module with the api module in ./api.
source_tree() {
	local dir=$1 tmp="$1.tmp"
	rm -rf "$tmp"
	module_copy "$CM_MODULE" "$CM_VERSION" "$tmp"
	rm -rf "$tmp/api" && module_copy "$CM_MODULE/api" "$API_VERSION" "$tmp/api"
	rm -rf "$dir"; mv "$tmp" "$dir"
}

# binaries SRC OUT: the two Chaos Mesh commands and the shim.
binaries() {
	local src=$1 out=$2
	mkdir -p "$out"
	if ! command -v gcc >/dev/null; then
		source "$FENCECHECK_ROOT/scripts/lib/docker.sh" # apt_install
		apt_install gcc libc6-dev
	fi
	step "go build chaos-controller-manager (CGO off)" run_logged "$FENCECHECK_CACHE/logs/chaos-mesh-controller.log" \
		bash -c "cd '$src' && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o '$out/chaos-controller-manager' ./cmd/chaos-controller-manager"
	step "go build chaos-daemon (cgo)" run_logged "$FENCECHECK_CACHE/logs/chaos-mesh-daemon.log" \
		bash -c "cd '$src' && CGO_ENABLED=1 go build -trimpath -ldflags '-s -w' -o '$out/chaos-daemon' ./cmd/chaos-daemon"
	step "go build nsexec shim" bash -c "cd '$FENCECHECK_ROOT' && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o '$out/nsexec' ./scripts/chaos-mesh/nsexec"
	step "go build imgbuild" bash -c "cd '$FENCECHECK_ROOT' && CGO_ENABLED=0 go build -trimpath -o '$out/imgbuild' ./cmd/imgbuild"
}

# daemon_rootfs: a cached root filesystem of the node image build with
# iptables, ipset, iproute2 and tc (the node's; before 2026-12-07 a separate
# tools one), else our own.
daemon_rootfs() {
	local f
	for f in $(ls -t "$FENCECHECK_CACHE"/nodeimage/rootfs-node-*.tar "$FENCECHECK_CACHE"/nodeimage/rootfs-tools-*.tar 2>/dev/null); do
		if tar -tf "$f" ./usr/sbin/ipset ./usr/sbin/iptables ./usr/sbin/ip ./usr/sbin/tc >/dev/null 2>&1; then
			echo "$f"; return 0
		fi
	done
	f="$WORK/rootfs-daemon-$(hash_str "$DEBIAN_SUITE $DAEMON_PKGS" "$(declare -f debian_rootfs debian_rootfs_tar)").tar"
	if [ ! -f "$f" ]; then
		source "$FENCECHECK_ROOT/scripts/lib/docker.sh" # apt_install
		step "daemon root filesystem ($DEBIAN_SUITE: $DAEMON_PKGS)" debian_rootfs_tar "$f" "$DAEMON_PKGS" chaos-daemon
	fi
	echo "$f"
}

# images BIN ROOTFS OUT: the controller on scratch (it is static), the
# daemon on Debian with nsexec where chaos-daemon looks for it.
images() {
	local bin=$1 rootfs=$2 out=$3
	"$bin/imgbuild" image --tag docker.io/fencecheck/chaos-controller-manager:dev --out "$out/chaos-controller-manager.tar" \
		--add "$bin/chaos-controller-manager:/usr/local/bin/chaos-controller-manager" --entrypoint /usr/local/bin/chaos-controller-manager
	"$bin/imgbuild" image --tag docker.io/fencecheck/chaos-daemon:dev --out "$out/chaos-daemon.tar" --rootfs-tar "$rootfs" \
		--add "$bin/chaos-daemon:/usr/local/bin/chaos-daemon" --add "$bin/nsexec:/usr/local/bin/nsexec" \
		--entrypoint /usr/local/bin/chaos-daemon
}

main() {
	API_VERSION=$(api_version) || die "cannot read the version of $CM_MODULE/api from go.mod"
	local rootfs hash out src t0
	rootfs=$(daemon_rootfs)
	# Only what the outputs are made of: the two Chaos Mesh builds read their
	# own module's go.sum, so ours is not an input; imgbuild's one dependency
	# that shapes an image is go-containerregistry, by version.
	hash=$(hash_str "$CM_VERSION $API_VERSION $(basename "$rootfs") $(go version) $(ggcr_version) ${FENCECHECK_CHAOS_MESH_SALT:-}" "$HERE/build.sh" "$HERE/nsexec" "$FENCECHECK_ROOT/cmd/imgbuild")
	out="$WORK/$hash"
	if [ -f "$out/chaos-daemon.tar" ] && [ -f "$out/chaos-controller-manager.tar" ] && [ -f "$out/crd.yaml" ]; then
		log "Chaos Mesh $CM_VERSION is cached (input hash $hash): nothing to build"
	else
		log "building Chaos Mesh $CM_VERSION (input hash $hash; a cold build took 43 min on 2 busy cores, under a minute with a warm Go build cache; logs in $FENCECHECK_CACHE/logs/)"
		t0=$(date +%s)
		src="$WORK/src-$CM_VERSION-$API_VERSION"
		[ -f "$src/api/go.mod" ] || step "writable module copy with ./api" source_tree "$src"
		rm -rf "$out.tmp"; mkdir -p "$out.tmp"
		binaries "$src" "$out.tmp/bin"
		cp "$src/manifests/crd.yaml" "$out.tmp/crd.yaml"
		step "images (controller on scratch, daemon on $(basename "$rootfs"))" images "$out.tmp/bin" "$rootfs" "$out.tmp"
		rm -rf "$out"; mv "$out.tmp" "$out"
		log "Chaos Mesh built in $(( $(date +%s) - t0 ))s"
	fi
	local n
	for n in chaos-controller-manager chaos-daemon; do
		cp "$out/$n.tar" "$FENCECHECK_CACHE/images/$n.tar.tmp" && mv "$FENCECHECK_CACHE/images/$n.tar.tmp" "$FENCECHECK_CACHE/images/$n.tar"
	done
	echo "$out"
}

with_lock "$WORK/build.lock" main
exit
