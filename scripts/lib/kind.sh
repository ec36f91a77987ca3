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

# cluster_disposal OUTCOME KEEP RC: what a run does with the kind cluster
# at its end, given what kind-up said of it (OUTCOME: created, reused,
# recreated, or "" when kind-up did not run or said nothing), --keep-cluster
# and the run's exit code: prints "delete" or "keep: <why>". Only a
# cluster the run created from nothing is ever deleted; one that existed
# before it is left up, whatever --keep-cluster says.
cluster_disposal() {
	local outcome=$1 keep=$2 rc=$3
	case "$outcome" in
	created) ;;
	reused | recreated) echo "keep: it existed before this run (kind-up $outcome it)"; return 0 ;;
	*) echo "keep: this run did not create it"; return 0 ;;
	esac
	if [ "$keep" = never ] || { [ "$keep" = on-failure ] && [ "$rc" = 0 ]; }; then
		echo delete
	else
		echo "keep: --keep-cluster=$keep, exit $rc"
	fi
}

# kubeconfig_names_kind FILE: whether the kubeconfig FILE points at the
# kind cluster $KIND_CLUSTER_NAME (its apiserver's published address, or
# its address inside the docker network); if not, it says why.
kubeconfig_names_kind() {
	local file=$1 hostport
	if ! docker info >/dev/null 2>&1; then
		log "docker is not running here, so there is no kind cluster $KIND_CLUSTER_NAME to load images into"
		return 1
	fi
	if [ -z "$(node_containers)" ]; then
		log "there is no kind cluster named $KIND_CLUSTER_NAME (KIND_CLUSTER_NAME) to load images into"
		return 1
	fi
	hostport=$(docker port "$(control_plane_container)" 6443/tcp 2>/dev/null | head -n1)
	if { [ -n "$hostport" ] && grep -qF "https://$hostport" "$file"; } || grep -qF "https://$(control_plane_container):6443" "$file"; then
		return 0
	fi
	log "$file does not point at the kind cluster $KIND_CLUSTER_NAME (its apiserver is https://${hostport:-?})"
	return 1
}
