#!/usr/bin/env bash
# k8s-bins.sh: build (or reuse from cache) the Kubernetes v1.34.4 binaries and
# etcd v3.6.5 from the Go module proxy, and print on stdout the absolute path
# of the directory that holds them (kubeadm kubelet kubectl kube-apiserver
# kube-controller-manager kube-scheduler kube-proxy etcd etcdctl).
# Progress goes to stderr. Outputs live under $FENCECHECK_CACHE/k8s-bins/<hash>,
# keyed by a hash of every input (module files, this script, Go version).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

case "${1:-}" in
-h | --help)
	sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
"") ;;
*) die "unknown argument: $1 (try --help)" ;;
esac

K8S_VERSION=v1.34.4
MODS="$FENCECHECK_ROOT/scripts/nodeimage/modules"
KUBE_CMDS=(kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)

hash=$(hash_inputs "$0" "$MODS/kubernetes/go.mod" "$MODS/kubernetes/go.sum" "$MODS/etcd/go.mod" "$MODS/etcd/go.sum")
out="$FENCECHECK_CACHE/k8s-bins/$K8S_VERSION-$hash"

if [ -f "$out/.complete" ]; then
	log "k8s-bins: reusing $out (input hash $hash)"
	echo "$out"
	exit 0
fi

build_kube() {
	local pkg="k8s.io/component-base/version" cgo="k8s.io/client-go/pkg/version" ld="" p
	local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
	for p in "$pkg" "$cgo"; do
		ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ld+=" -X $p.gitTreeState=clean -X $p.gitCommit=fencecheck-offline-$hash"
		ld+=" -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	local pkgs=() c
	for c in "${KUBE_CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	(cd "$MODS/kubernetes" && CGO_ENABLED=0 go build -v -trimpath -mod=mod -tags selinux,notest,grpcnotrace \
		-ldflags "-s -w $ld" -o "$tmp/" "${pkgs[@]}")
}

build_etcd() {
	(cd "$MODS/etcd" && CGO_ENABLED=0 go build -v -trimpath -mod=mod -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3 &&
		CGO_ENABLED=0 go build -trimpath -mod=mod -ldflags "-s -w" -o "$tmp/etcdctl" go.etcd.io/etcd/etcdctl/v3)
}

build_all() {
	tmp="$out.tmp.$$"
	rm -rf "$tmp"; mkdir -p "$tmp"
	log "k8s-bins: building Kubernetes $K8S_VERSION (${KUBE_CMDS[*]}) and etcd v3.6.5 into $out"
	log "k8s-bins: a cold build takes 5-13 min on 2 cores; logs in $FENCECHECK_CACHE/logs/"
	step "go build kubernetes $K8S_VERSION (7 commands)" run_logged "$FENCECHECK_CACHE/logs/k8s-bins-kube.log" build_kube
	step "go build etcd v3.6.5 + etcdctl" run_logged "$FENCECHECK_CACHE/logs/k8s-bins-etcd.log" build_etcd
	local b
	for b in "${KUBE_CMDS[@]}" etcd etcdctl; do
		[ -x "$tmp/$b" ] || die "k8s-bins: $b missing after build"
	done
	"$tmp/kube-apiserver" --version | grep -q "$K8S_VERSION" || die "k8s-bins: kube-apiserver reports a wrong version: $("$tmp/kube-apiserver" --version)"
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
