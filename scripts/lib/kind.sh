# shellcheck shell=bash
# Helpers around the kind CLI and the cluster's node containers. Requires
# common.sh.

KIND_VERSION=${KIND_VERSION:-v0.33.0}
KIND="$FENCECHECK_CACHE/bin/kind"

ensure_kind_cli() {
	if [ -x "$KIND" ] && "$KIND" version 2>/dev/null | grep -q "$KIND_VERSION"; then return 0; fi
	mkdir -p "$FENCECHECK_CACHE/bin" "$FENCECHECK_CACHE/logs"
	# -trimpath and CGO_ENABLED=0 as in every other build here, so the
	# standard library comes from the shared build cache: without them a cold
	# install compiles its own copy (76 s of CPU against 23 s).
	step "go install sigs.k8s.io/kind@$KIND_VERSION" run_logged "$FENCECHECK_CACHE/logs/kind-install.log" \
		env GOBIN="$FENCECHECK_CACHE/bin" CGO_ENABLED=0 go install -trimpath "sigs.k8s.io/kind@$KIND_VERSION"
}

# node_containers: "name state image" per node container of the cluster.
node_containers() {
	docker ps -a --filter "label=io.x-k8s.kind.cluster=$KIND_CLUSTER_NAME" \
		--format '{{.Names}} {{.State}} {{.Image}}' | sort
}

control_plane_container() { echo "$KIND_CLUSTER_NAME-control-plane"; }

# kubectl inside the control-plane node: always the cluster's own version,
# no host kubectl needed.
node_kubectl() {
	docker exec "$(control_plane_container)" kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"
}

# export_kind_logs REASON: save `kind export logs` under reports/.
export_kind_logs() {
	local dir
	dir="$FENCECHECK_ROOT/reports/kind-logs-$(date -u +%Y%m%dT%H%M%SZ)"
	log "exporting kind logs to $dir ($1)"
	"$KIND" export logs "$dir" --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || log "kind export logs failed too"
}
