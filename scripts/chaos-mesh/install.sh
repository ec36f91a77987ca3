#!/usr/bin/env bash
# install.sh up|down: install Chaos Mesh on the kind cluster in place of our
# chaos agent (`make chaos-mesh-up`), or remove it and bring the agent back
# (`make chaos-mesh-down`). One actor per NetworkChaos object: while Chaos
# Mesh is on, our agent's DaemonSet is scaled to no node.
#
# up:   build (scripts/chaos-mesh/build.sh, cached), kind load both images,
#       refuse if any chaos object is live, turn our agent off, replace our
#       NetworkChaos CRD by Chaos Mesh's (the module's crd.yaml, server-side),
#       a self-signed webhook certificate, manifests/chaos-mesh/*.yaml, wait
#       until the controller and every daemon are ready.
# down: delete every Chaos Mesh object while its controller still runs (its
#       finalizers recover the rules), then its namespace, RBAC and CRDs;
#       re-apply manifests/chaos (our CRD) and wait for our agent on every node.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

MODE=${1:-}
case "$MODE" in
-h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
up | down) ;;
*) die "usage: install.sh up|down (try --help)" ;;
esac

NS=chaos-mesh
AGENT_NS=fencecheck-system
# The nodeSelector that matches no node: our agent is off while it is set.
OFF_KEY=fencecheck.io/chaos-agent
k() { node_kubectl "$@"; }
apply() { docker exec -i "$(control_plane_container)" kubectl --kubeconfig /etc/kubernetes/admin.conf apply --server-side --force-conflicts "$@" -f - >&2; }

# live_chaos: the chaos objects still in effect, in any namespace (ours and
# Chaos Mesh's kinds), one "kind ns/name" a line: not reported recovered
# and not refused. Recovered leftovers are harmless (they go with our CRD).
live_chaos() {
	local r
	for r in networkchaos.chaos-mesh.org podpauses.chaos.fencecheck.io; do
		k get "$r" -A -o json 2>/dev/null | jq -r '.items[]
			| select(.status.refused == null)
			| select([.status.conditions[]? | select(.type == "AllRecovered" and .status == "True")] | length == 0)
			| "\(.kind) \(.metadata.namespace)/\(.metadata.name)"' || true
	done
}

webhook_secret() {
	k -n "$NS" get secret chaos-mesh-webhook-certs >/dev/null 2>&1 && return 0
	local d; d=$(mktemp -d)
	openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=chaos-mesh-controller-manager.$NS.svc" \
		-addext "subjectAltName=DNS:chaos-mesh-controller-manager.$NS.svc,DNS:chaos-mesh-controller-manager.$NS.svc.cluster.local" \
		-keyout "$d/tls.key" -out "$d/tls.crt" 2>/dev/null || { rm -rf "$d"; die "openssl could not make the webhook certificate"; }
	k -n "$NS" create secret generic chaos-mesh-webhook-certs --from-literal=tls.crt="$(cat "$d/tls.crt")" \
		--from-literal=tls.key="$(cat "$d/tls.key")" --from-literal=ca.crt="$(cat "$d/tls.crt")" >&2
	rm -rf "$d"
}

agent_off() {
	k -n "$AGENT_NS" get ds/chaos-agent >/dev/null 2>&1 || { log "our chaos agent is not installed: nothing to turn off"; return 0; }
	k -n "$AGENT_NS" patch ds/chaos-agent --type merge -p "{\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"$OFF_KEY\":\"off\"}}}}}" >&2
	local i
	for i in $(seq 120); do
		[ -z "$(k -n "$AGENT_NS" get pods -l app.kubernetes.io/name=chaos-agent -o name)" ] && return 0
		sleep 1 # polling with a deadline
	done
	die "our chaos agent's pods are still there after 120s"
}

agent_on() {
	# Say it now rather than after a 180 s rollout of pods that cannot start.
	local node
	for node in $(node_containers | cut -d' ' -f1); do
		docker exec "$node" crictl inspecti docker.io/fencecheck/chaos-agent:dev >/dev/null 2>&1 ||
			die "image fencecheck/chaos-agent:dev is not on node $node: run 'make images' (it builds and loads it), then 'make chaos-mesh-down' again"
	done
	k -n "$AGENT_NS" get ds/chaos-agent -o jsonpath='{.spec.template.spec.nodeSelector}' 2>/dev/null | grep -q "$OFF_KEY" &&
		k -n "$AGENT_NS" patch ds/chaos-agent --type json -p "[{\"op\":\"remove\",\"path\":\"/spec/template/spec/nodeSelector/${OFF_KEY/\//~1}\"}]" >&2
	local f
	for f in "$FENCECHECK_ROOT"/manifests/chaos/*.yaml; do apply --field-manager=fencecheck <"$f"; done
	k -n "$AGENT_NS" rollout status ds/chaos-agent --timeout=180s >&2
}

up() {
	local out
	out=$(bash "$FENCECHECK_ROOT/scripts/chaos-mesh/build.sh") || die "building Chaos Mesh failed"
	docker info >/dev/null 2>&1 || die "docker is not running: run 'make kind-up' first"
	ensure_kind_cli
	[ -n "$(node_containers)" ] || die "kind cluster '$KIND_CLUSTER_NAME' does not exist: run 'make kind-up' first"
	local n
	for n in chaos-controller-manager chaos-daemon; do
		step "kind load fencecheck/$n:dev" "$KIND" load image-archive "$out/$n.tar" --name "$KIND_CLUSTER_NAME" >&2
	done
	local live; live=$(live_chaos)
	[ -z "$live" ] || die "chaos objects are live (their executor must finish them first): $live"
	step "turn our chaos agent off" agent_off
	# Our CRD and Chaos Mesh's share a name: delete ours first, so no field of
	# its schema (the CEL scope rules) survives in Chaos Mesh's.
	if k get crd networkchaos.chaos-mesh.org -o jsonpath='{.metadata.labels}' 2>/dev/null | grep -q fencecheck; then
		step "delete our NetworkChaos CRD" k delete crd networkchaos.chaos-mesh.org --wait=true >&2
	fi
	step "Chaos Mesh CRDs (server-side, $(du -h "$out/crd.yaml" | cut -f1))" apply --field-manager=chaos-mesh <"$out/crd.yaml"
	k wait --for=condition=Established --timeout=60s crd/networkchaos.chaos-mesh.org crd/podnetworkchaos.chaos-mesh.org >&2
	apply --field-manager=chaos-mesh <"$FENCECHECK_ROOT/manifests/chaos-mesh/00-namespace.yaml"
	webhook_secret
	local f
	for f in "$FENCECHECK_ROOT"/manifests/chaos-mesh/0[1-9]*.yaml; do apply --field-manager=chaos-mesh <"$f"; done
	# The tags stay :dev: restart so the pods run the images just loaded.
	k -n "$NS" rollout restart deploy/chaos-controller-manager ds/chaos-daemon >&2
	step "controller ready" k -n "$NS" rollout status deploy/chaos-controller-manager --timeout=180s >&2
	step "daemons ready" k -n "$NS" rollout status ds/chaos-daemon --timeout=180s >&2
	log "Chaos Mesh is on (built in $out); our agent is off until 'make chaos-mesh-down'"
}

down() {
	docker info >/dev/null 2>&1 || die "docker is not running"
	if k get ns "$NS" >/dev/null 2>&1; then
		local r
		for r in $(k get crd -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep '\.chaos-mesh\.org$'); do
			[ -z "$(k get "$r" -A -o name 2>/dev/null)" ] || { log "deleting every $r (Chaos Mesh recovers them)"; k delete "$r" -A --all --wait=true --timeout=120s >&2; }
		done
		step "delete namespace $NS" k delete ns "$NS" --wait=true --timeout=180s >&2
	fi
	k delete clusterrole,clusterrolebinding -l app.kubernetes.io/instance=chaos-mesh --ignore-not-found >&2
	# Every Chaos Mesh CRD goes, networkchaos included (ours replaces it).
	local names; names=$(k get crd -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep '\.chaos-mesh\.org$' || true)
	if [ -n "$names" ] && ! k get crd networkchaos.chaos-mesh.org -o jsonpath='{.metadata.labels}' | grep -q fencecheck; then
		# shellcheck disable=SC2086
		step "delete the Chaos Mesh CRDs" k delete crd $names --wait=true --timeout=120s >&2
	fi
	step "our chaos agent back on every node" agent_on
	log "Chaos Mesh is off; our agent is on"
}

with_lock "$FENCECHECK_CACHE/kind.lock" "$MODE"
exit
