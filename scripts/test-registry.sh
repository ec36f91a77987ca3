#!/usr/bin/env bash
# test-registry.sh: proves `--kubeconfig` plus `--image-repo` on the kind
# cluster, the way an existing cluster runs the suite: from a registry, with
# no `kind load` at all.
#   1. builds a registry from github.com/distribution/distribution/v3
#      (scripts/registry, cached by input hash) and runs it on the kind
#      network's gateway address, reachable from the nodes, over plain HTTP;
#   2. points each node's containerd at it (certs.d/HOST:PORT/hosts.toml; the
#      node's config gets config_path, which needs a containerd restart);
#   3. removes every fencecheck/*:dev image from the nodes;
#   4. runs scripts/conformance.sh --kubeconfig --image-repo HOST:PORT/fencecheck
#      on a scenario subset, keeping the namespaces;
#   5. checks that every pod of the run and the chaos agent ran an image from
#      the registry by digest (pod status imageID), the one images.json names;
#   6. restores, whatever happened: namespaces deleted, registry images and
#      containerd config removed from the nodes (restart), our :dev images
#      loaded again (scripts/images.sh), the chaos agent ready on :dev.
# The cluster is shared: run it under the cluster lock, e.g.
#   flock -w 3000 /tmp/fencecheck-cluster.lock bash scripts/test-registry.sh
#
#   --run-id ID        reports/<ID>/ (default registry-<UTC time>)
#   --feature REGEX    scenarios to run (default ^(partition-heal|neg-fencing-off)$)
#   --port N           registry port on the gateway (default 5000)
#   -h, --help         this text
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

RUN_ID="registry-$(date -u +%Y%m%d-%H%M%S)"
FEATURE='^(partition-heal|neg-fencing-off)$'
PORT=5000
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	--run-id) RUN_ID=${2:?--run-id needs an id}; shift 2 ;;
	--feature) FEATURE=${2:?--feature needs a regex}; shift 2 ;;
	--port) PORT=${2:?--port needs a number}; shift 2 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
done
[[ "$PORT" =~ ^[0-9]+$ ]] || die "--port must be a number, got '$PORT'"
[[ "$RUN_ID" =~ ^[A-Za-z0-9._-]+$ ]] || die "--run-id may use letters, digits, . _ - only"
[ -r "$KUBECONFIG" ] || die "no kubeconfig at $KUBECONFIG: the kind cluster must be up (make kind-up)"
docker info >/dev/null 2>&1 || die "docker is not running: the kind cluster must be up (make kind-up)"
NODES=$(node_containers | awk '$2 == "running" { print $1 }')
[ -n "$NODES" ] || die "kind cluster '$KIND_CLUSTER_NAME' has no running node"
REPORTS="$FENCECHECK_ROOT/reports/$RUN_ID"
mkdir -p "$REPORTS"
PROOF="$REPORTS/registry-proof.txt"
: >"$PROOF"
proof() { printf '%s\n' "$*" | tee -a "$PROOF" >&2; }

# until_ok WHAT SECONDS CMD...: poll CMD until it succeeds or the deadline.
until_ok() {
	local what=$1 secs=$2; shift 2
	local end=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || { log "gave up waiting for $what after ${secs}s"; return 1; }
		sleep 0.5
	done
}

# The registry, built once per input hash.
REG_SRC="$FENCECHECK_ROOT/scripts/registry"
REG_BIN="$FENCECHECK_CACHE/bin/registry-$(hash_inputs "$REG_SRC/go.mod" "$REG_SRC/go.sum" "$REG_SRC/main.go")"
if [ ! -x "$REG_BIN" ]; then
	step "build the registry (distribution v3.1.2, $REG_BIN)" run_logged "$FENCECHECK_CACHE/logs/registry-build.log" \
		bash -c "cd '$REG_SRC' && CGO_ENABLED=0 go build -trimpath -o '$REG_BIN.tmp' . && mv '$REG_BIN.tmp' '$REG_BIN'"
fi

# The nodes reach the host at the kind network's gateway.
GW=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | head -n1)
[ -n "$GW" ] || die "the docker network 'kind' has no IPv4 gateway"
HOSTPORT="$GW:$PORT"
REPO="$HOSTPORT/fencecheck"
CERTS_DIR="/etc/containerd/certs.d/$HOSTPORT"
CFG=/etc/containerd/config.toml

REG_PID="" REG_DATA="" RESTARTED="" NAMESPACES=""
restore() {
	local rc=$?
	trap - EXIT
	set +e
	log "restoring the cluster (exit $rc so far)"
	if [ -n "$NAMESPACES" ]; then
		# shellcheck disable=SC2086
		step "delete the run's namespaces" node_kubectl delete ns $NAMESPACES --wait --timeout=180s >&2 || rc=1
	fi
	local n
	for n in $NODES; do
		docker exec "$n" crictl images | awk -v r="$REPO/" 'index($1, r) == 1 { print $3 }' |
			sort -u | xargs -r docker exec "$n" crictl rmi >/dev/null 2>&1
		docker exec "$n" rm -rf "$CERTS_DIR"
	done
	for n in $RESTARTED; do
		step "$n: restore $CFG, restart containerd" restore_containerd "$n" || rc=1
	done
	[ -z "$RESTARTED" ] || step "nodes Ready" node_kubectl wait --for=condition=Ready nodes --all --timeout=180s >&2 || rc=1
	step "reload our :dev images (kind load), roll the chaos agent back" \
		bash "$FENCECHECK_ROOT/scripts/images.sh" reconciler sink witness chaos-agent probe || rc=1
	local img
	img=$(node_kubectl -n fencecheck-system get ds/chaos-agent -o jsonpath='{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].imagePullPolicy}')
	log "chaos agent DaemonSet runs: $img"
	[ "$img" = "fencecheck/chaos-agent:dev Never" ] || { log "ERROR: the chaos agent is not back on fencecheck/chaos-agent:dev"; rc=1; }
	node_kubectl -n fencecheck-system rollout status ds/chaos-agent --timeout=120s >&2 || rc=1
	[ -z "$REG_PID" ] || kill "$REG_PID" 2>/dev/null
	[ -z "$REG_DATA" ] || rm -rf "$REG_DATA"
	log "reports: $REPORTS (registry-proof.txt); exit $rc"
	exit "$rc"
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

restore_containerd() {
	local n=$1
	docker exec "$n" sh -c "[ -f $CFG.fencecheck-orig ] && mv $CFG.fencecheck-orig $CFG && systemctl restart containerd" &&
		until_ok "containerd on $n" 60 docker exec "$n" crictl info
}

# configure_node NODE: containerd pulls HOST:PORT over plain HTTP. config_path
# is read at start only: when the node's config lacks it, add it (keeping the
# original to restore) and restart containerd; running containers survive.
configure_node() {
	local n=$1
	docker exec -i "$n" sh -c "mkdir -p '$CERTS_DIR' && cat >'$CERTS_DIR/hosts.toml'" <<EOF
# fencecheck scripts/test-registry.sh (removed after the test)
server = "http://$HOSTPORT"
[host."http://$HOSTPORT"]
  capabilities = ["pull", "resolve"]
EOF
	if docker exec "$n" grep -q 'config_path *= *"/etc/containerd/certs.d"' "$CFG"; then
		return 0
	fi
	docker exec "$n" grep -q config_path "$CFG" && die "$n: $CFG sets another config_path; not touching it"
	docker exec "$n" sh -c "cp $CFG $CFG.fencecheck-orig && printf '%s\n' '' '# fencecheck scripts/test-registry.sh (restored after the test)' \
		'[plugins.\"io.containerd.grpc.v1.cri\".registry]' '  config_path = \"/etc/containerd/certs.d\"' >>$CFG && systemctl restart containerd"
	RESTARTED="$RESTARTED $n"
	until_ok "containerd on $n" 60 docker exec "$n" crictl info
}

# 1. The registry.
REG_DATA=$(mktemp -d /tmp/fencecheck-registry.XXXXXX)
"$REG_BIN" --addr "$HOSTPORT" --root "$REG_DATA" >"$REPORTS/registry.log" 2>&1 &
REG_PID=$!
until_ok "the registry at http://$HOSTPORT/v2/" 20 curl -fsS "http://$HOSTPORT/v2/" || die "the registry did not start: $(tail -n 5 "$REPORTS/registry.log")"
proof "registry: distribution v3.1.2 ($REG_BIN) at http://$HOSTPORT (pid $REG_PID, data $REG_DATA)"

# 2. The nodes pull from it.
for n in $NODES; do
	step "$n: containerd pulls $HOSTPORT over HTTP" configure_node "$n"
	docker exec "$n" curl -fsS -m 5 "http://$HOSTPORT/v2/" >/dev/null || die "$n cannot reach the registry at http://$HOSTPORT"
done
[ -z "$RESTARTED" ] || {
	proof "containerd restarted with config_path on:$RESTARTED"
	step "nodes Ready after the restart" node_kubectl wait --for=condition=Ready nodes --all --timeout=180s >&2
	step "kube-system pods ready" node_kubectl -n kube-system wait --for=condition=Ready pods --all --timeout=180s >&2
}

# 3. No fencecheck image on any node: whatever runs must be pulled.
for n in $NODES; do
	for i in reconciler sink witness chaos-agent probe crcontroller; do
		docker exec "$n" crictl rmi "docker.io/fencecheck/$i:dev" >/dev/null 2>&1 || true
	done
	left=$(docker exec "$n" crictl images | awk '$1 ~ /fencecheck/ { print $1 ":" $2 }')
	[ -z "$left" ] || die "$n still has fencecheck images: $left"
	proof "$n: no fencecheck image before the run (crictl images)"
done

# 4. The run: --kubeconfig plus --image-repo, nothing else.
before=$(node_kubectl get ns -o name | sed 's|^namespace/||' | grep '^fc-' || true)
rc=0
step "conformance through the registry" bash "$FENCECHECK_ROOT/scripts/conformance.sh" --kubeconfig "$KUBECONFIG" \
	--image-repo "$REPO" --keep-cluster always --timeout 20m --run-id "$RUN_ID" -- --feature "$FEATURE" --keep-namespaces || rc=$?
NAMESPACES=$(node_kubectl get ns -o name | sed 's|^namespace/||' | grep '^fc-' | grep -vxF "${before:-none}" || true)
[ -f "$REPORTS/summary.md" ] && proof "$(head -n 3 "$REPORTS/summary.md")"
[ -f "$REPORTS/images.json" ] || die "the suite wrote no images.json: nothing was pushed"
proof "images.json: $(tr -d ' \n' <"$REPORTS/images.json")"

# 5. Every container of the run, and the agent, ran a pushed image by digest.
[ -n "$NAMESPACES" ] || die "the run left no namespace to inspect"
bad=0 seen=0
# in_map REF: REF is one of the digest references the suite pushed.
in_map() { grep -qF "\"$1\"" "$REPORTS/images.json"; }
# What each pod asked for (spec: the rewritten reference) and what the
# kubelet says it runs (status imageID: the digest containerd resolved).
while read -r what ns pod ref; do
	[ -n "$ref" ] || continue
	seen=$((seen + 1))
	proof "pod $ns/$pod $what $ref"
	case "$ref" in "$REPO"/*@sha256:*) ;; *) bad=1; proof "  NOT from $REPO by digest" ;; esac
	in_map "$ref" || { bad=1; proof "  not in images.json"; }
done < <(for ns in $NAMESPACES fencecheck-system; do
	node_kubectl -n "$ns" get pods -o go-template='{{range .items}}{{$p := .metadata.name}}{{range .spec.containers}}{{"image "}}{{$p}} {{.image}}{{"\n"}}{{end}}{{range .status.containerStatuses}}{{"imageID "}}{{$p}} {{.imageID}}{{"\n"}}{{end}}{{end}}' |
		awk -v ns="$ns" '{ print $1, ns, $2, $3 }'
done)
# The reconcilers are gone by now (the scenarios stop them): their imageIDs
# are in the history the suite recorded while they ran (under_test.images).
recs=$(grep -o "$REPO/reconciler@sha256:[0-9a-f]*" "$REPORTS/history.json" | sort -u)
[ -n "$recs" ] || { bad=1; proof "history.json: no reconciler imageID from $REPO"; }
for ref in $recs; do
	seen=$((seen + 1))
	proof "history.json under_test.images: reconciler imageID $ref"
	in_map "$ref" || { bad=1; proof "  not in images.json"; }
done
# The registry's access log: who fetched which manifest by digest.
pulls=$(awk '$6 == "\"GET" && $7 ~ "^/v2/fencecheck/[a-z-]+/manifests/sha256:" && $9 == 200 { split($7, p, "/"); print $1, p[4] }' "$REPORTS/registry.log" |
	sort | uniq -c | awk '{ printf "%s %s x%s; ", $2, $3, $1 }')
proof "manifest pulls by digest in the registry's log (node address, image): ${pulls:-none found}"
for n in $NODES; do
	proof "$n images after the run: $(docker exec "$n" crictl images | awk '$1 ~ /fencecheck/ { printf "%s:%s ", $1, $2 }')"
	docker exec "$n" crictl images | awk '$1 ~ /^docker.io\/fencecheck\// { found = 1 } END { exit found }' ||
		{ bad=1; proof "  $n has a docker.io/fencecheck image: something loaded it"; }
done
proof "references checked: $seen; all from $REPO by digest: $([ "$bad" = 0 ] && [ "$seen" -gt 0 ] && echo yes || echo NO)"
[ "$bad" = 0 ] && [ "$seen" -gt 0 ] || { [ "$rc" != 0 ] || rc=1; }
[ "$rc" = 0 ] || log "the run or the proof failed (exit $rc): see $REPORTS"
exit "$rc"
