#!/usr/bin/env bash
# build.sh: build the kind node image offline (Kubernetes v1.35.3) and print
# its tag on stdout. Every input (this directory, the module files, kind's
# version, the Go version) goes into the tag's hash: a warm run with an
# existing image rebuilds nothing. Progress on stderr, one line per step with
# its duration; long builds log to $FENCECHECK_CACHE/logs/ with a heartbeat.
#
# Steps, in three lanes: k8s-bins.sh (one module, one `go build`: Kubernetes,
# etcd, CoreDNS with kubeadm's plugins only, crictl, local-path-provisioner,
# containerd); ours (pause, kindnetd stand-in, imgbuild) and the kind CLI; one
# Debian root filesystem by mmdebstrap (the node's, also under kube-proxy,
# kindnetd, the local-path helper). Then the base image beside the component
# images and a server tarball, and `kind build node-image --type file`.
# FENCECHECK_NODEIMAGE_SALT=x adds x to the tag's hash (bench: force a build).
#   --print-tag  print the tag these inputs give and build nothing (kind-up.sh
#                compares it with a running cluster's image)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/docker.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"
source "$FENCECHECK_ROOT/scripts/lib/rootfs.sh"

case "${1:-}" in
-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--print-tag) PRINT_TAG=1 ;;
"") ;;
*) die "unknown argument: $1 (try --help)" ;;
esac

K8S_VERSION=v1.35.3
# The image tags kubeadm 1.35 asks for. The binaries behind them are CoreDNS
# v1.12.4 (no v1.13 is served here; kubeadm 1.35 writes the same Corefile as
# 1.34) and etcd v3.6.5 (3.6.6 is not served): scripts/k8s-bins.sh.
COREDNS_VERSION=v1.13.1
ETCD_TAG=3.6.6-0
PAUSE_TAG=3.10.1
# The node's packages. The same root filesystem is under the images that
# need tools (kube-proxy, kindnetd, the local-path helper: iptables, nftables,
# conntrack, ipset, iproute2, kmod, ebtables) and chaos-daemon's: a second
# root filesystem for them cost more CPU (28 s here) than their bigger layer.
NODE_PKGS=systemd,conntrack,iptables,nftables,ipset,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,runc,containernetworking-plugins,socat,ebtables,e2fsprogs

NI="$FENCECHECK_ROOT/scripts/nodeimage"
WORK="$FENCECHECK_CACHE/nodeimage"
KIND_MOD="$(go env GOMODCACHE)/sigs.k8s.io/kind@$KIND_VERSION"
mkdir -p "$WORK" "$FENCECHECK_CACHE/bin" "$FENCECHECK_CACHE/logs"

# Images kind's node image expects (from kind's own manifests).
kind_const() { sed -n "s/^const $1 = \"\(.*\)\"$/\1/p" "$KIND_MOD/pkg/build/nodeimage/$2"; }

ensure_kind_module() {
	[ -d "$KIND_MOD" ] || (cd "$FENCECHECK_ROOT" && go mod download "sigs.k8s.io/kind@$KIND_VERSION") || die "cannot download sigs.k8s.io/kind@$KIND_VERSION"
}

# components DIR: our own Go binaries (the node's others are k8s-bins.sh's).
build_components() {
	local dir=$1 tmp="$1.tmp"
	rm -rf "$tmp"; mkdir -p "$tmp"
	step "pause, kindnetd stand-in" bash -c "cd '$NI' && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o '$tmp/' ./cmd/pause ./cmd/kindnetd"
	step "imgbuild" bash -c "cd '$FENCECHECK_ROOT' && CGO_ENABLED=0 go build -trimpath -o '$tmp/imgbuild' ./cmd/imgbuild"
	local b
	for b in pause kindnetd imgbuild; do
		[ -x "$tmp/$b" ] || die "component $b missing after build"
	done
	rm -rf "$dir"; mv "$tmp" "$dir"
}

# customize_node: the steps of kind's images/base/Dockerfile, from kind's
# own files in the module cache.
customize_node() {
	local d=$1 f="$KIND_MOD/images/base/files"
	install -m 0755 "$f"/usr/local/bin/* "$d/usr/local/bin/"
	mkdir -p "$d/kind"; cp -r "$f/kind/." "$d/kind/"; chmod -R a+rX "$d/kind"
	[ -d "$d/kind/bin" ] && chmod 0755 "$d"/kind/bin/*
	cp "$f"/etc/crictl.yaml "$d/etc/"
	mkdir -p "$d/etc/containerd" "$d/etc/default" "$d/etc/sysctl.d" "$d/etc/systemd/system/kubelet.service.d"
	cp "$f"/etc/containerd/* "$d/etc/containerd/"
	cp "$f"/etc/default/* "$d/etc/default/"
	cp "$f"/etc/sysctl.d/* "$d/etc/sysctl.d/"
	find "$f/etc/systemd/system" -maxdepth 1 -type f -exec cp {} "$d/etc/systemd/system/" \;
	cp "$f"/etc/systemd/system/kubelet.service.d/* "$d/etc/systemd/system/kubelet.service.d/"
	find "$d/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
	rm -f "$d"/lib/systemd/system/multi-user.target.wants/* "$d"/etc/systemd/system/*.wants/* \
		"$d"/lib/systemd/system/local-fs.target.wants/* "$d"/lib/systemd/system/sockets.target.wants/*udev* \
		"$d"/lib/systemd/system/sockets.target.wants/*initctl* "$d"/lib/systemd/system/basic.target.wants/*
	echo "ReadKMsg=no" >>"$d/etc/systemd/journald.conf"
	ln -sf /usr/lib/systemd/systemd "$d/sbin/init"
	chroot "$d" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
	chroot "$d" systemctl mask systemd-binfmt.service >/dev/null 2>&1
	mkdir -p "$d/etc/kubernetes/manifests" "$d/opt/cni/bin"
	local p
	for p in host-local loopback ptp portmap; do cp "$d/usr/lib/cni/$p" "$d/opt/cni/bin/"; done
}

# node_layer_tar BINS OUT.tar: containerd, crictl and the containerd config on top of the
# base root filesystem. restrict_oom_score_adj: the nested runc cannot lower
# oom_score_adj on hosts without CAP_SYS_RESOURCE (harmless elsewhere).
node_layer_tar() {
	local bins=$1 out=$2 s="$WORK/node-layer.tmp"
	rm -rf "$s"; mkdir -p "$s/usr/local/bin" "$s/etc/containerd"
	cp "$bins"/{containerd,ctr,containerd-shim-runc-v2,crictl} "$s/usr/local/bin/"
	"$bins/ctr" oci spec | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		jq 'del(.process.rlimits)' >"$s/etc/containerd/cri-base.json"
	sed -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
		-e "s#sandbox_image = \"registry.k8s.io/pause:[^\"]*\"#sandbox_image = \"registry.k8s.io/pause:$PAUSE_TAG\"#" \
		"$KIND_MOD/images/base/files/etc/containerd/config.toml" >"$s/etc/containerd/config.toml"
	grep -q 'restrict_oom_score_adj = true' "$s/etc/containerd/config.toml" || die "could not set restrict_oom_score_adj in kind's containerd config"
	tar --numeric-owner --owner=0 --group=0 -C "$s" -cf "$out" . && rm -rf "$s"
}

# component_images COMP ROOTFS.layer OUTDIR BINDIR: image archives kind's
# tarball builder reads, built side by side (the root filesystem compressed
# once, by `imgbuild layer`, for every image on it). kube-proxy.tar also carries
# every other image the node needs (kind reads tags from `repositories`,
# written first). A subshell: its jobs are its own (in_parallel).
component_images() (
	local comp=$1 rootfs=$2 out=$3 bins=$4 ib="$1/imgbuild" t="$3/single" failed="$3/failed"
	mkdir -p "$t"; : >"$failed"
	local c
	for c in kube-apiserver kube-controller-manager kube-scheduler; do
		in_parallel "$failed" "$ib" image --tag "registry.k8s.io/$c:$K8S_VERSION" --out "$t/$c.tar" --add "$bins/$c:/usr/local/bin/$c" --entrypoint "/usr/local/bin/$c"
	done
	in_parallel "$failed" "$ib" image --tag "registry.k8s.io/kube-proxy:$K8S_VERSION" --out "$t/kube-proxy.tar" --layer "$rootfs" --add "$bins/kube-proxy:/usr/local/bin/kube-proxy" --entrypoint /usr/local/bin/kube-proxy
	in_parallel "$failed" "$ib" image --tag "registry.k8s.io/etcd:$ETCD_TAG" --out "$t/etcd.tar" --add "$bins/etcd:/usr/local/bin/etcd" --add "$bins/etcdctl:/usr/local/bin/etcdctl" --entrypoint /usr/local/bin/etcd
	in_parallel "$failed" "$ib" image --tag "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" --out "$t/coredns.tar" --add "$bins/coredns:/coredns" --entrypoint /coredns
	in_parallel "$failed" "$ib" image --tag "registry.k8s.io/pause:$PAUSE_TAG" --out "$t/pause.tar" --add "$comp/pause:/pause" --entrypoint /pause
	in_parallel "$failed" "$ib" image --tag "$(kind_const kindnetdImage const_cni.go)" --out "$t/kindnetd.tar" --layer "$rootfs" --add "$comp/kindnetd:/bin/kindnetd" --entrypoint /bin/kindnetd
	in_parallel "$failed" "$ib" image --tag "$(kind_const storageProvisionerImage const_storage.go)" --out "$t/lpp.tar" --add "$bins/local-path-provisioner:/usr/bin/local-path-provisioner" --entrypoint /usr/bin/local-path-provisioner
	in_parallel "$failed" "$ib" image --tag "$(kind_const storageHelperImage const_storage.go)" --out "$t/helper.tar" --layer "$rootfs" --cmd /bin/sh
	wait
	[ ! -s "$failed" ] || { log "imgbuild failed: $(cat "$failed")"; exit 1; }
	for c in kube-apiserver kube-controller-manager kube-scheduler; do
		"$ib" archive --out "$out/$c.tar" "$t/$c.tar" || exit
	done
	"$ib" archive --out "$out/kube-proxy.tar" "$t"/{kube-proxy,etcd,coredns,pause,kindnetd,lpp,helper}.tar || exit
	rm -rf "$t" "$failed"
)

server_tarball() {
	local bins=$1 imgs=$2 out=$3 s="$WORK/server.tmp"
	rm -rf "$s"; mkdir -p "$s/kubernetes/server/bin"
	echo "$K8S_VERSION" >"$s/kubernetes/version"
	ln "$bins"/{kubeadm,kubelet,kubectl} "$s/kubernetes/server/bin/" 2>/dev/null || cp "$bins"/{kubeadm,kubelet,kubectl} "$s/kubernetes/server/bin/"
	ln "$imgs"/*.tar "$s/kubernetes/server/bin/" 2>/dev/null || cp "$imgs"/*.tar "$s/kubernetes/server/bin/"
	# kind reads only gzip; pigz uses every core (apt_install brings it).
	local gz=gzip; ! command -v pigz >/dev/null || gz=pigz
	tar -C "$s" -cf - kubernetes | "$gz" -1 >"$out.tmp" && mv "$out.tmp" "$out"
	rm -rf "$s"
}

# build_base COMP BINS ROOTFS.layer TAG: returns at the first failed step
# (errexit may not apply: build_node_image's caller runs it as an `if`
# condition).
build_base() {
	local comp=$1 bins=$2 rootfs=$3 base=$4 layer="$WORK/node-layer.tar"
	step "node layer (containerd, crictl, config)" node_layer_tar "$bins" "$layer" || return
	step "base image $base" "$comp/imgbuild" image --tag "$base" --out "$WORK/base.tar" \
		--layer "$rootfs" --rootfs-tar "$layer" \
		--entrypoint /usr/local/bin/entrypoint,/sbin/init --env container=docker --stopsignal 'SIGRTMIN+3' || return
	step "docker load base image" bash -c "docker load -q -i '$WORK/base.tar' >&2" || return
	rm -f "$WORK/base.tar" "$layer"
}

# build_node_image: component images and the server tarball, while the base
# image builds and loads beside them, then kind's own node-image build on
# top of the base image (no pulls: every image it needs is in the tarball's
# archives).
build_node_image() {
	local comp=$1 nodefs=$2 bins=$3 base=$4 image=$5 imgs="$WORK/images.tmp" tarball="$WORK/kubernetes-server-linux-amd64.tar.gz"
	# Each step returns on failure: a caller's `step` runs this function
	# as an `if` condition, where bash's errexit does not apply.
	# The root filesystem is under four images: compressed once, and kept
	# beside its tar (ROOTFS.layer.json, written last, says it is whole).
	local rootfs=${nodefs%.tar}.layer
	[ -f "$rootfs.json" ] || step "compress the root filesystem once (imgbuild layer)" \
		"$comp/imgbuild" layer --out "$rootfs" "$nodefs" || return
	local base_pid=""
	if ! docker image inspect "$base" >/dev/null 2>&1; then
		build_base "$comp" "$bins" "$rootfs" "$base" &
		base_pid=$!
	fi
	rm -rf "$imgs"; mkdir -p "$imgs"
	step "component images (apiserver, controller-manager, scheduler, kube-proxy + etcd, coredns, pause, kindnetd, local-path)" \
		component_images "$comp" "$rootfs" "$imgs" "$bins" || return
	step "server tarball" server_tarball "$bins" "$imgs" "$tarball" || return
	rm -rf "$imgs"
	[ -z "$base_pid" ] || wait "$base_pid" || die "building the base image $base failed (see above)"
	step "kind build node-image $image" run_logged "$FENCECHECK_CACHE/logs/kind-build-node-image.log" \
		"$KIND" build node-image --type file "$tarball" --base-image "$base" --image "$image" || return
	rm -f "$tarball"
}

# tags: set image and base (the tags) and comp_hash and nodefs_hash (the
# cached artifacts' names). One hash per artifact, from
# exactly what goes into it (file contents, versions, and the text of the
# shell functions that build it), so a change rebuilds only what it affects.
tags() {
	ensure_kind_module
	local cnames; cnames="$(kind_const kindnetdImage const_cni.go) $(kind_const storageProvisionerImage const_storage.go) $(kind_const storageHelperImage const_storage.go)"
	[ "$(wc -w <<<"$cnames")" = 3 ] || die "could not read image names from kind's module at $KIND_MOD"
	local bins_hash base_hash hash
	bins_hash=$(hash_inputs "$FENCECHECK_ROOT/scripts/k8s-bins.sh" "$NI/modules/node")
	comp_hash=$(hash_str "$(declare -f build_components)" "$NI/go.mod" "$NI/cmd" "$FENCECHECK_ROOT/cmd/imgbuild" "$FENCECHECK_ROOT/go.sum")
	nodefs_hash=$(hash_str "$DEBIAN_SUITE $NODE_PKGS" "$(declare -f debian_rootfs debian_rootfs_tar customize_node)" "$KIND_MOD/images/base/files")
	base_hash=$(hash_str "$comp_hash $bins_hash $nodefs_hash $PAUSE_TAG" "$(declare -f node_layer_tar build_base)")
	hash=$(hash_str "$bins_hash $base_hash $KIND_VERSION $K8S_VERSION $ETCD_TAG $PAUSE_TAG $COREDNS_VERSION $cnames ${FENCECHECK_NODEIMAGE_SALT:-}" "$(declare -f in_parallel component_images server_tarball build_node_image)")
	image="fencecheck/kind-node:$K8S_VERSION-$hash" base="fencecheck/kind-base:$base_hash${FENCECHECK_NODEIMAGE_SALT:+-$FENCECHECK_NODEIMAGE_SALT}"
}

main() {
	local image base comp_hash nodefs_hash
	tags
	if [ -n "${PRINT_TAG:-}" ]; then
		echo "$image"; return 0
	fi
	ensure_docker
	if docker image inspect "$image" >/dev/null 2>&1; then
		log "node image $image is cached: nothing to build"
		echo "$image"; return 0
	fi
	log "building node image $image (cached steps are skipped; from nothing it takes 8-23 min on 2 cores, by machine (docs/kind.md); logs in $FENCECHECK_CACHE/logs/)"
	apt_install mmdebstrap jq pigz
	local t0; t0=$(date +%s)
	local comp="$WORK/components-$comp_hash" nodefs="$WORK/rootfs-node-$nodefs_hash.tar"

	# Lane 1 (network + dpkg): the root filesystem. Lane 2 (CPU): the
	# node's go build. Lane 3: our small Go builds and the kind CLI.
	local rootfs_pid=""
	if [ ! -f "$nodefs" ]; then
		(
			# Lanes 1 and 3 have slack; lane 2, the node's go build, is the
			# critical path and CPU-bound (its wall is 1.06x its CPU floor on
			# 2 cores): niced, they take the cores it leaves idle first.
			renice -n 10 -p "$BASHPID" >/dev/null
			rm -f "${nodefs%.tar}.layer" "${nodefs%.tar}.layer.json" # a new tar's layer is made anew
			step "node root filesystem ($DEBIAN_SUITE, mmdebstrap)" debian_rootfs_tar "$nodefs" "$NODE_PKGS" node customize_node
		) &
		rootfs_pid=$!
	fi
	# Lane 3 overlaps lane 2: the big build has phases (module downloads, the
	# idle 10% of its cores) the small one fills. The kind CLI is needed only
	# for the last step, so it builds in the small lane.
	(
		renice -n 10 -p "$BASHPID" >/dev/null
		[ -d "$comp" ] || step "pause, kindnetd stand-in, imgbuild" build_components "$comp"
		ensure_kind_cli
	) &
	local comp_pid=$!
	local bins; bins=$(step "node binaries (scripts/k8s-bins.sh)" bash "$FENCECHECK_ROOT/scripts/k8s-bins.sh")
	wait "$comp_pid" || die "building the components or the kind CLI failed (see above)"
	if [ -n "$rootfs_pid" ]; then
		log "waiting for the root filesystem"
		wait "$rootfs_pid" || die "building the root filesystem failed (see above)"
	fi

	step "node image from server tarball" build_node_image "$comp" "$nodefs" "$bins" "$base" "$image"
	log "node image $image built in $(( $(date +%s) - t0 ))s"
	echo "$image"
}

main "$@"
exit
