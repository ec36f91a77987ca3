#!/usr/bin/env bash
# k8s-bins.sh: build (or reuse from cache) the node's Go binaries from one
# module (scripts/nodeimage/modules/node) and print on stdout the absolute path
# of the directory that holds them: Kubernetes v1.35.3 (kubeadm kubelet
# kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy),
# etcd and etcdctl v3.6.5, CoreDNS v1.12.4 (kubeadm's plugins), crictl v1.34.0,
# local-path-provisioner v0.0.33, containerd v2.2.1 (containerd, ctr, the runc
# shim). One module, one build list, one `go build`:
# client-go and friends compile once for all of them, not once per component.
# Progress goes to stderr. Outputs live under $FENCECHECK_CACHE/k8s-bins/<hash>,
# keyed by a hash of every input (module files, this script, Go version).
# With K8S_BINS_ACTIONGRAPH=FILE the build also writes go's action graph
# there (bench/node-build.sh reads it with cmd/buildprofile).
#
#   --apiserver-only  build only etcd, etcdctl and kube-apiserver (what the
#                     local target and the integration tests run), into
#                     <dir>-apiserver, or reuse the full build if it is
#                     there. Its compiled packages stay in go's build cache,
#                     so the full build after it compiles them once.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

case "${1:-}" in
-h | --help)
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
--apiserver-only) ONLY_APISERVER=1 ;;
"") ;;
*) die "unknown argument: $1 (try --help)" ;;
esac

K8S_VERSION=v1.35.3
MODS="$FENCECHECK_ROOT/scripts/nodeimage/modules"
CTRD=github.com/containerd/containerd/v2
# required MODULE: the version the node module requires, which is the one
# stamped into the binary (containerd's and crictl's --version).
required() {
	local v; v=$(sed -n "s#^\t$1 \(v[^ ]*\)\$#\1#p" "$MODS/node/go.mod")
	[ -n "$v" ] || die "k8s-bins: no $1 requirement in $MODS/node/go.mod"
	echo "$v"
}
CONTAINERD_VERSION=$(required "$CTRD")
CRICTL_VERSION=$(required sigs.k8s.io/cri-tools)
KUBE_CMDS=(kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
# The module's other commands; go build names each binary after its package
# path, dropping a /vN suffix, so only etcd's (…/server/v3: server) is renamed.
OTHER_PKGS=(go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3 ./coredns sigs.k8s.io/cri-tools/cmd/crictl github.com/rancher/local-path-provisioner
	"$CTRD/cmd/containerd" "$CTRD/cmd/ctr" "$CTRD/cmd/containerd-shim-runc-v2")
BINS=("${KUBE_CMDS[@]}" etcd etcdctl coredns crictl local-path-provisioner containerd ctr containerd-shim-runc-v2)

hash=$(hash_inputs "$0" "$MODS/node")
out="$FENCECHECK_CACHE/k8s-bins/$K8S_VERSION-$hash"
WHAT="Kubernetes $K8S_VERSION, etcd, CoreDNS, crictl, local-path, containerd $CONTAINERD_VERSION"
if [ -n "${ONLY_APISERVER:-}" ]; then
	if [ -f "$out/.complete" ]; then
		log "k8s-bins: reusing the full build $out for etcd and kube-apiserver"
		echo "$out"
		exit 0
	fi
	KUBE_CMDS=(kube-apiserver)
	OTHER_PKGS=(go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3)
	BINS=(kube-apiserver etcd etcdctl)
	WHAT="kube-apiserver $K8S_VERSION, etcd and etcdctl, alone"
	out="$out-apiserver"
fi

if [ -f "$out/.complete" ]; then
	log "k8s-bins: reusing $out (input hash $hash)"
	echo "$out"
	exit 0
fi

# crictl_modfile DIR: print a copy of the module's go.mod, made in DIR, that
# builds crictl v1.34.0 from a copy of its module with kubectl v0.35's
# terminal sizes adapted (_crictl/termsize.go says why). The go command does
# not let -overlay replace files in the module cache, so the copy is DIR's.
crictl_modfile() {
	local dir=$1 line='streamOptions.TerminalSizeQueue = t.MonitorSize(t.GetSize())'
	module_copy sigs.k8s.io/cri-tools "$CRICTL_VERSION" "$dir/cri-tools"
	grep -qxF "	$line" "$dir/cri-tools/cmd/crictl/exec.go" || die "k8s-bins: crictl's exec.go no longer has the line _crictl/termsize.go adapts: $line"
	sed -i "s/^\t$line\$/\tstreamOptions.TerminalSizeQueue = termSizeQueue{t.MonitorSize(t.GetSize())}/" "$dir/cri-tools/cmd/crictl/exec.go"
	cp "$MODS/node/_crictl/termsize.go" "$dir/cri-tools/cmd/crictl/zz_fencecheck_termsize.go"
	cp "$MODS/node/go.mod" "$MODS/node/go.sum" "$dir/"
	printf '\nreplace sigs.k8s.io/cri-tools => %s/cri-tools\n' "$dir" >>"$dir/go.mod"
	echo "$dir/go.mod"
}

# build_node: every command in one `go build`, so the go command schedules
# all packages of all binaries on every core and compiles each one once.
build_node() {
	local pkg="k8s.io/component-base/version" cgo="k8s.io/client-go/pkg/version" ld="" p
	local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
	for p in "$pkg" "$cgo"; do
		ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ld+=" -X $p.gitTreeState=clean -X $p.gitCommit=fencecheck-offline-$hash"
		ld+=" -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	ld+=" -X $CTRD/version.Version=$CONTAINERD_VERSION -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION"
	local pkgs=() c graph=() modfile=()
	[ -z "${K8S_BINS_ACTIONGRAPH:-}" ] || graph=("-debug-actiongraph=$K8S_BINS_ACTIONGRAPH")
	[ -n "${ONLY_APISERVER:-}" ] || modfile=("-modfile=$(crictl_modfile "$crictl_dir")") || return
	for c in "${KUBE_CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	# Tags: Kubernetes' own but notest (selinux, grpcnotrace), then
	# containerd's (no snapshotters the node has no use for). notest only
	# leaves out apimachinery's fuzz helpers (intstr, meta/v1 Time), but with
	# it meta/v1 and all above it compile apart from ours (untagged), and
	# the first verdict compiled client-go and api a second time.
	(cd "$MODS/node" && CGO_ENABLED=0 go build -v -trimpath -mod=mod "${graph[@]}" "${modfile[@]}" \
		-tags selinux,grpcnotrace,no_aufs,no_zfs,no_btrfs,no_devmapper \
		-ldflags "-s -w $ld" -o "$tmp/" "${pkgs[@]}" "${OTHER_PKGS[@]}") &&
		mv "$tmp/server" "$tmp/etcd"
}

build_all() {
	tmp="$out.tmp.$$" crictl_dir="$out.crictl.$$"
	rm -rf "$tmp" "$crictl_dir"; mkdir -p "$tmp" "$crictl_dir"
	trap 'rm -rf "$crictl_dir"' EXIT
	log "k8s-bins: building ${BINS[*]} (module scripts/nodeimage/modules/node) into $out"
	# From an empty build cache on our 2-core machines (docs/kind.md): the
	# whole node 390-1212 s, the apiserver alone 190-556 s, by machine speed.
	local cold="6-20 min"
	[ -z "${ONLY_APISERVER:-}" ] || cold="3-9 min"
	log "k8s-bins: from an empty Go build cache this takes $cold on 2 cores, by machine; seconds when the cache has it; log in $FENCECHECK_CACHE/logs/k8s-bins.log"
	step "go build ${#BINS[@]} commands ($WHAT)" \
		run_logged "$FENCECHECK_CACHE/logs/k8s-bins.log" build_node
	local b
	for b in "${BINS[@]}"; do
		[ -x "$tmp/$b" ] || die "k8s-bins: $b missing after build"
	done
	"$tmp/kube-apiserver" --version | grep -q "$K8S_VERSION" || die "k8s-bins: kube-apiserver reports a wrong version: $("$tmp/kube-apiserver" --version)"
	if [ -z "${ONLY_APISERVER:-}" ]; then
		"$tmp/containerd" --version | grep -qw -- "$CONTAINERD_VERSION" || die "k8s-bins: containerd reports a wrong version: $("$tmp/containerd" --version)"
		"$tmp/crictl" --version | grep -qw -- "$CRICTL_VERSION" || die "k8s-bins: crictl reports a wrong version: $("$tmp/crictl" --version)"
	fi
	touch "$tmp/.complete"
	rm -rf "$out"; mv "$tmp" "$out"
	log "k8s-bins: done: $(ls "$out" | tr '\n' ' ')"
}

# Serialize builds: a second caller waits and then reuses the result.
exec {lockfd}>>"$FENCECHECK_CACHE/k8s-bins.lock"
flock "$lockfd"
if [ ! -f "$out/.complete" ]; then
	build_all
fi
echo "$out"
