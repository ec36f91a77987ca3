#!/usr/bin/env bash
# kind-up.sh: bring up the project's kind cluster ($KIND_CLUSTER_NAME, default
# fencecheck) offline and write its kubeconfig to $KUBECONFIG.
#
#   KIND_NODE_IMAGE  node image to use (default: our offline-built image,
#                    see scripts/nodeimage/build.sh, cached by input hash)
#   KIND_WORKERS     worker nodes (default 1; one control-plane node always)
#
# Reuses a healthy cluster (without touching the node image, but warning
# when it runs another one than it would be made with now); restarts
# stopped node containers (after a machine restart) and recreates the cluster
# when that does not bring it back or its node count differs. On
# failure it exports kind logs into reports/. Serialized with
# flock $FENCECHECK_CACHE/kind.lock. With FENCECHECK_KIND_UP_OUTCOME=FILE it
# writes created, reused or recreated into FILE.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/docker.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

case "${1:-}" in
-h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) die "unknown argument: $1 (try --help)" ;;
esac

WORKERS=${KIND_WORKERS:-1}
[[ "$WORKERS" =~ ^[0-9]+$ ]] || die "KIND_WORKERS must be a number, got '$WORKERS'"
READY_TIMEOUT=${KIND_READY_TIMEOUT:-300}

kind_config() {
	cat <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
# Needed where the nested runc cannot lower oom_score_adj (no CAP_SYS_RESOURCE);
# our node image already has it, this keeps KIND_NODE_IMAGE images working too.
containerdConfigPatches:
- |-
  [plugins."io.containerd.grpc.v1.cri"]
    restrict_oom_score_adj = true
# The kubelet of v1.35 refuses to start on a cgroup v1 host (ours are)
# unless told not to; on a cgroup v2 host the setting changes nothing.
kubeadmConfigPatches:
- |-
  kind: KubeletConfiguration
  failCgroupV1: false
nodes:
- role: control-plane
YAML
	local i
	for ((i = 0; i < WORKERS; i++)); do echo "- role: worker"; done
}

# ready_nodes SINCE: how many nodes are Ready with a kubelet heartbeat at or
# after SINCE (epoch seconds), so a stale Ready from before a restart does
# not count.
ready_nodes() {
	node_kubectl get nodes -o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{"\n"}{end}{end}' 2>/dev/null |
		while read -r status hb; do
			[ "$status" = True ] && [ "$(date -d "$hb" +%s 2>/dev/null || echo 0)" -ge "$1" ] && echo ok
		done | wc -l
}

# wait_ready SECONDS [SINCE]: every node Ready (heartbeat since SINCE),
# CoreDNS available.
wait_ready() {
	local deadline=$(( $(date +%s) + $1 )) since=${2:-0} want=$((WORKERS + 1))
	until [ "$(ready_nodes "$since")" = "$want" ]; do
		[ "$(date +%s)" -lt "$deadline" ] || { log "nodes not Ready in time:"; node_kubectl get nodes >&2 || true; return 1; }
		sleep 2
	done
	local left=$(( deadline - $(date +%s) )); [ "$left" -gt 5 ] || left=5
	node_kubectl -n kube-system rollout status deployment/coredns --timeout="${left}s" >/dev/null 2>&1 ||
		{ log "CoreDNS not available in time"; node_kubectl -n kube-system get pods -o wide >&2 || true; return 1; }
}

write_kubeconfig() {
	mkdir -p "$(dirname "$KUBECONFIG")"
	# 0600 from the first byte: it holds the cluster admin's client key.
	(umask 077 && "$KIND" get kubeconfig --name "$KIND_CLUSTER_NAME" >"$KUBECONFIG.tmp") &&
		chmod 600 "$KUBECONFIG.tmp" && mv "$KUBECONFIG.tmp" "$KUBECONFIG"
	log "kubeconfig written to $KUBECONFIG (mode $(stat -c %a "$KUBECONFIG"))"
}

create_cluster() {
	local image=$1 cfg="$FENCECHECK_CACHE/kind-config-$KIND_CLUSTER_NAME.yaml"
	kind_config >"$cfg"
	if ! step "kind create cluster $KIND_CLUSTER_NAME (1 control-plane + $WORKERS workers, $image)" \
		run_logged "$FENCECHECK_CACHE/logs/kind-create.log" \
		"$KIND" create cluster --name "$KIND_CLUSTER_NAME" --image "$image" --config "$cfg" \
		--kubeconfig "$KUBECONFIG" --wait "${READY_TIMEOUT}s" --retain; then
		export_kind_logs "kind create cluster failed"
		"$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || true
		die "kind create cluster failed; logs in reports/kind-logs-* and $FENCECHECK_CACHE/logs/kind-create.log"
	fi
	step "wait for nodes Ready and CoreDNS" wait_ready "$READY_TIMEOUT" || {
		export_kind_logs "cluster not Ready after create"
		die "cluster created but not Ready; logs in reports/"
	}
}

# record_outcome WORD: tell the caller that asked (FENCECHECK_KIND_UP_OUTCOME
# names a file) whether this run created the cluster from nothing
# (created), found it healthy (reused) or had to replace one that existed
# (recreated): scripts/conformance.sh deletes only a cluster it created.
record_outcome() {
	[ -z "${FENCECHECK_KIND_UP_OUTCOME:-}" ] || echo "$1" >"$FENCECHECK_KIND_UP_OUTCOME"
}

# warn_other_image NODES: a reused cluster keeps the node image it was made
# with, which need not be the one asked for (KIND_NODE_IMAGE) or the one
# this checkout builds (after a pull that moved Kubernetes, say): say so,
# with both, since the verdicts will be about the cluster's. Recreating it
# instead would cost a node image build the caller did not ask for.
warn_other_image() {
	local want=${KIND_NODE_IMAGE:-} from="KIND_NODE_IMAGE is" have
	if [ -z "$want" ]; then
		from="this checkout builds (scripts/nodeimage/build.sh --print-tag)"
		want=$(bash "$FENCECHECK_ROOT/scripts/nodeimage/build.sh" --print-tag) ||
			{ log "WARNING: could not work out this checkout's node image tag; not comparing it with the cluster's"; return 0; }
	fi
	have=$(awk '{print $3}' <<<"$1" | sort -u) # one line per image its nodes run
	if [ "$have" != "$want" ]; then
		log "WARNING: the cluster runs ${have//$'\n'/ and }; $from $want. The verdicts will be about the cluster's; 'make kind-down kind-up' to switch"
	fi
}

# reuse_existing: 0 when an existing cluster is (made) healthy; otherwise
# the cluster is deleted and 1 returned so that a new one gets created.
reuse_existing() {
	local nodes=$1 count stopped
	count=$(wc -l <<<"$nodes")
	stopped=$(awk '$2!="running"' <<<"$nodes" | wc -l)
	# After dockerd (re)started or nodes were started, a Ready status must be
	# newer than that: an old one proves nothing.
	local since=$DOCKERD_STARTED_AT
	if [ "$count" != $((WORKERS + 1)) ]; then
		log "existing cluster has $count nodes, want $((WORKERS + 1)) (KIND_WORKERS=$WORKERS): recreating it"
	else
		if [ "$stopped" != 0 ]; then
			log "$stopped of $count node containers are stopped (machine restart?): starting them"
			since=$(date +%s)
			# control plane first so the kubelets find the apiserver
			step "docker start control plane" docker start "$(control_plane_container)" >/dev/null
			local others; others=$(awk '{print $1}' <<<"$nodes" | grep -v -- '-control-plane$' || true)
			[ -z "$others" ] || step "docker start workers" docker start $others >/dev/null
		fi
		local timeout=60; [ "$stopped" = 0 ] && [ "$since" = 0 ] || timeout=$READY_TIMEOUT
		if step "health check: $count nodes Ready, CoreDNS available" wait_ready "$timeout" "$since"; then
			warn_other_image "$nodes"
			log "cluster $KIND_CLUSTER_NAME is healthy: reusing it"
			return 0
		fi
		export_kind_logs "existing cluster unhealthy"
		log "existing cluster did not become healthy: recreating it"
	fi
	step "kind delete cluster $KIND_CLUSTER_NAME" "$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >&2
	return 1
}

# raise_inotify_limits: every node's kubelet, systemd and containerd take
# inotify instances from the host's per-user pool (default 128); with a few
# nodes (or two clusters) kubelet then fails with "too many open files"
# (kind's known issue). Raise to kind's recommended values when lower.
raise_inotify_limits() {
	local key want cur
	for kv in fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288; do
		key=${kv%=*} want=${kv#*=}
		cur=$(sysctl -n "$key" 2>/dev/null || echo 0)
		if [ "$cur" -lt "$want" ]; then
			if [ "$(id -u)" = 0 ] && sysctl -qw "$kv"; then
				log "raised $key from $cur to $want (kind nodes need it)"
			else
				log "WARNING: $key=$cur is below $want; nodes may fail with 'too many open files' (run: sysctl -w $kv)"
			fi
		fi
	done
}

# keep_cluster_addresses_inside: a packet from the kind network to a
# Service or pod address that no node rule took (a ClusterIP in the moment
# kube-proxy swaps its rules as endpoints appear, a deleted pod's address)
# leaves by the host's default route. Here that route's gateway answers any
# TCP connection on port 8080 with an empty 404 (server: keryx), so a
# client's kept-alive connection got that 404 for minutes and a scenario
# never left steady (docs/kind.md, "Cluster addresses stay inside"). The
# host rejects such packets at once instead (DOCKER-USER: docker's chain
# for the user's rules), so the client's next attempt dials again.
keep_cluster_addresses_inside() {
	local br cidr cidrs
	br="br-$(docker network inspect kind -f '{{.Id}}' | cut -c1-12)"
	cidrs=$(docker exec "$(control_plane_container)" sed -n 's/^ *\(podSubnet\|serviceSubnet\): *//p' /kind/kubeadm.conf | sort -u)
	[ -n "$cidrs" ] || die "no podSubnet/serviceSubnet in the control plane's /kind/kubeadm.conf"
	for cidr in $cidrs; do
		[[ "$cidr" == *:* ]] && continue # IPv4 here; the cluster is single-stack
		local rule=(DOCKER-USER -i "$br" ! -o "$br" -d "$cidr" -j REJECT --reject-with icmp-net-unreachable)
		iptables -C "${rule[@]}" 2>/dev/null || iptables -I "${rule[@]}"
	done
	log "packets from $br to $(tr '\n' ' ' <<<"$cidrs")rejected at the host, never sent to its default gateway"
}

main() {
	step "docker" ensure_docker
	raise_inotify_limits
	mkdir -p /lib/modules
	# The kind CLI is built where it is first needed: on a fresh machine
	# that is inside the node image build, beside the big Go build.
	local nodes; nodes=$(node_containers)
	[ -z "$nodes" ] || ensure_kind_cli
	if [ -n "$nodes" ] && reuse_existing "$nodes"; then
		record_outcome reused
	else
		# Said before the create, so that a failed create is still ours.
		if [ -n "$nodes" ]; then record_outcome recreated; else record_outcome created; fi
		local image=${KIND_NODE_IMAGE:-}
		if [ -n "$image" ]; then
			log "using KIND_NODE_IMAGE=$image"
		else
			image=$(step "node image" bash "$FENCECHECK_ROOT/scripts/nodeimage/build.sh")
		fi
		ensure_kind_cli
		create_cluster "$image"
	fi
	keep_cluster_addresses_inside
	write_kubeconfig
	node_kubectl get nodes -o wide >&2
	log "cluster $KIND_CLUSTER_NAME is up"
}

with_lock "$FENCECHECK_CACHE/kind.lock" main
exit
