#!/usr/bin/env bash
# conformance.sh: the main job (`make conformance`). Brings up the kind
# cluster (scripts/kind-up.sh) unless --kubeconfig is given, builds and loads
# the images (scripts/images.sh), runs the conformance suite
# (conformance/suite, tag conformance, sigs.k8s.io/e2e-framework) and writes
# everything into reports/<run-id>/ (history.json, verdicts.json, junit.xml,
# summary.md, index.html, test-output.json, suite.log; kind logs on failure),
# with reports/latest pointing at it.
#
#   --kubeconfig FILE       use this cluster; no kind-up, and no image loading
#                           but --controller-image's (below)
#   --image-repo REG/PATH   with --kubeconfig: build the images, push them to
#                           REG/PATH/NAME (go-containerregistry; docker login
#                           credentials) and run every pod from there by
#                           digest: the recipe for an existing cluster
#   --keep-cluster WHEN     always | on-failure (default) | never: delete the
#                           kind cluster after the run unless kept. Only a
#                           cluster this run created is ever deleted: one
#                           that was up before it (kind-up reused it) stays
#   --run-id ID             default: UTC time
#   --seed N                chaos schedule seed (default: random, recorded)
#   --skip-images           do not rebuild/load the images
#   --controller DIR        test the controller in DIR (its manifests) instead
#                           of our fixture (docs/controller-contract.md);
#                           `fencecheck controller-check DIR` checks DIR
#                           first, and an error stops the run before any
#                           cluster work
#   --controller-image PKG  also build and load ./PKG as fencecheck/<name>:dev
#                           (the repository's examples; a user loads their
#                           own). With --kubeconfig: pushed with --image-repo,
#                           else loaded into the kind cluster
#                           $KIND_CLUSTER_NAME, which FILE must point at
#                           (refused otherwise); not built with --skip-images
#   --chaos NAME            auto (default: Chaos Mesh if the cluster runs it,
#                           else our agent) | builtin | chaos-mesh: the
#                           real Chaos Mesh executes the partitions; on kind it
#                           is built, installed in place of our agent for the
#                           run and removed after (scripts/chaos-mesh/); with
#                           --kubeconfig the cluster must run it already.
#                           Pause scenarios are reported not runnable.
#   --timeout D             go test timeout (default 40m)
#   --parallel N            scenarios run at once (the suite's --parallel;
#                           default 3, measured on 2 cores: docs/ci.md);
#                           fault steps wait for quiet (suite flag
#                           --quiet-gate=false turns that off)
#   -h, --help              this text
#   -- ARGS                 passed to the suite: e2e-framework flags
#                           (--feature REGEX, --skip-features, --labels k=v)
#                           and the suite's (--lease-duration, --partition,
#                           --deploy-timeout, --scenario-timeout, --takeovers,
#                           --keep-namespaces, --quiet-gate, --executor ...)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

KUBECONFIG_ARG=""
KEEP=on-failure
RUN_ID=""
SEED=""
SKIP_IMAGES=0
TIMEOUT=40m
SUITE_ARGS=()
CONTROLLER=""
CONTROLLER_IMAGE=()
CHAOS=auto
IMAGE_REPO=""
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	--kubeconfig) KUBECONFIG_ARG=${2:?--kubeconfig needs a file}; shift 2 ;;
	--kubeconfig=*) KUBECONFIG_ARG=${1#*=}; shift ;;
	--keep-cluster) KEEP=${2:?--keep-cluster needs always, on-failure or never}; shift 2 ;;
	--keep-cluster=*) KEEP=${1#*=}; shift ;;
	--run-id) RUN_ID=${2:?}; shift 2 ;;
	--run-id=*) RUN_ID=${1#*=}; shift ;;
	--seed) SEED=${2:?}; shift 2 ;;
	--seed=*) SEED=${1#*=}; shift ;;
	--image-repo) IMAGE_REPO=${2:?--image-repo needs REGISTRY/PATH}; shift 2 ;;
	--image-repo=*) IMAGE_REPO=${1#*=}; shift ;;
	--skip-images) SKIP_IMAGES=1; shift ;;
	--controller) CONTROLLER=${2:?--controller needs a directory}; shift 2 ;;
	--controller=*) CONTROLLER=${1#*=}; shift ;;
	--controller-image) CONTROLLER_IMAGE=("${2:?--controller-image needs a package path}"); shift 2 ;;
	--controller-image=*) CONTROLLER_IMAGE=("${1#*=}"); shift ;;
	--chaos) CHAOS=${2:?--chaos needs auto, builtin or chaos-mesh}; shift 2 ;;
	--chaos=*) CHAOS=${1#*=}; shift ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--timeout=*) TIMEOUT=${1#*=}; shift ;;
	--parallel) SUITE_ARGS+=(--parallel "${2:?--parallel needs a number}"); shift 2 ;;
	--parallel=*) SUITE_ARGS+=(--parallel "${1#*=}"); shift ;;
	--) shift; SUITE_ARGS+=("$@"); break ;;
	*) die "unknown argument: $1 (try --help; suite flags go after --)" ;;
	esac
done
case "$CHAOS" in auto | builtin | chaos-mesh) ;; *) die "--chaos must be auto, builtin or chaos-mesh, not '$CHAOS'" ;; esac
SUITE_ARGS=(--executor "$CHAOS" "${SUITE_ARGS[@]}")
case "$KEEP" in always | on-failure | never) ;; *) die "--keep-cluster must be always, on-failure or never, not '$KEEP'" ;; esac
for ((i = 0; i < ${#SUITE_ARGS[@]}; i++)); do
	[ "${SUITE_ARGS[i]}" != --parallel ] || [[ "${SUITE_ARGS[i + 1]:-}" =~ ^[1-9][0-9]*$ ]] || die "--parallel must be a positive number, got '${SUITE_ARGS[i + 1]:-}'"
done
[ -z "$SEED" ] || [[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed must be a number, got '$SEED'"
if [ -n "$IMAGE_REPO" ]; then
	# Pushed images need a cluster that pulls them: kind-up's cluster gets
	# kind load instead.
	[ -n "$KUBECONFIG_ARG" ] || die "--image-repo $IMAGE_REPO needs --kubeconfig: the images are pushed for a cluster you bring (without --kubeconfig this script brings up kind and loads them with kind load)"
	# A malformed or unreachable registry is named now, before any build.
	(cd "$FENCECHECK_ROOT" && go run ./cmd/fencecheck push-images --image-repo "$IMAGE_REPO" --check) ||
		die "--image-repo $IMAGE_REPO: see above"
fi
RUN_ID=${RUN_ID:-$(date -u +%Y%m%d-%H%M%S)}
[[ "$RUN_ID" =~ ^[A-Za-z0-9._-]+$ ]] || die "--run-id may use letters, digits, . _ - only"
SEED=${SEED:-$(( $(date +%s%N) % 1000000 ))}
if [ -n "$CONTROLLER" ]; then
	# Relative to the current directory, else to the repository (the suite
	# gets an absolute path).
	dir=$(cd "$CONTROLLER" 2>/dev/null && pwd) || dir=$(cd "$FENCECHECK_ROOT/$CONTROLLER" 2>/dev/null && pwd) ||
		die "--controller $CONTROLLER is not a directory of manifests"
	compgen -G "$dir/*.yaml" >/dev/null || die "--controller $CONTROLLER has no *.yaml manifests (a Deployment and its RBAC)"
	CONTROLLER=$dir
	# The directory is checked before any cluster time: an error here
	# would otherwise show only once a scenario deploys it.
	step "controller-check $CONTROLLER" bash -c 'cd "$0" && exec go run ./cmd/fencecheck controller-check "$1"' "$FENCECHECK_ROOT" "$CONTROLLER" ||
		die "--controller $CONTROLLER: the directory breaks the contract (above; docs/controller-contract.md)"
	SUITE_ARGS=(--controller "$CONTROLLER" "${SUITE_ARGS[@]}")
fi
# --controller-image on a cluster of --kubeconfig's: pushed with
# --image-repo, or loaded into the kind cluster FILE points at; anything
# else is refused now, never left out in silence.
LOAD_CONTROLLER_IMAGE=0
if [ -n "$KUBECONFIG_ARG" ] && [ ${#CONTROLLER_IMAGE[@]} -gt 0 ] && [ -z "$IMAGE_REPO" ]; then
	if [ "$SKIP_IMAGES" = 1 ]; then
		log "--skip-images: ${CONTROLLER_IMAGE[0]} is not built or loaded either; its image must be in the cluster already"
	else
		[ -r "$KUBECONFIG_ARG" ] || die "--kubeconfig $KUBECONFIG_ARG is not readable"
		kubeconfig_names_kind "$KUBECONFIG_ARG" ||
			die "--controller-image ${CONTROLLER_IMAGE[0]} with --kubeconfig $KUBECONFIG_ARG: this script loads an image only into the kind cluster $KIND_CLUSTER_NAME, and that is not the cluster (above). Push it with --image-repo REGISTRY/PATH, or load it into your cluster yourself and add --skip-images"
		LOAD_CONTROLLER_IMAGE=1
	fi
fi

REPORTS="$FENCECHECK_ROOT/reports/$RUN_ID"
mkdir -p "$REPORTS"
ln -sfn "$RUN_ID" "$FENCECHECK_ROOT/reports/latest"
log "run $RUN_ID, seed $SEED, reports in $REPORTS"

# One EXIT trap, whichever way the script ends (a failed step, a signal,
# the end): kind logs on failure, then the cluster this script brought up
# goes down unless --keep-cluster keeps it (cluster_disposal).
KIND_UP_OUTCOME=
CHAOS_MESH_UP=0
IMAGES_PID=
SUITE_BUILD_PID=
SUITE_BIN="$FENCECHECK_CACHE/bin/conformance-suite-$RUN_ID.test"
finish() {
	local rc=$?
	trap - EXIT
	# A failed kind-up leaves the builds running: stop them.
	[ -z "$IMAGES_PID" ] || kill "$IMAGES_PID" 2>/dev/null || true
	[ -z "$SUITE_BUILD_PID" ] || kill "$SUITE_BUILD_PID" 2>/dev/null || true
	rm -f "$SUITE_BIN"
	if [ "$CHAOS_MESH_UP" = 1 ]; then
		step "Chaos Mesh off, our agent back on" bash "$FENCECHECK_ROOT/scripts/chaos-mesh/install.sh" down || { log "chaos-mesh-down failed: the cluster still runs Chaos Mesh"; rc=1; }
	fi
	if [ -n "$KIND_UP_OUTCOME" ]; then # this run brought the cluster up
		local outcome disposal
		outcome=$(cat "$KIND_UP_OUTCOME" 2>/dev/null || true)
		rm -f "$KIND_UP_OUTCOME"
		if [ "$rc" != 0 ] && [ -n "$outcome" ]; then
			ensure_kind_cli
			log "exporting kind logs to $REPORTS/kind-logs"
			"$KIND" export logs "$REPORTS/kind-logs" --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || log "kind export logs failed"
		fi
		disposal=$(cluster_disposal "$outcome" "$KEEP" "$rc")
		if [ "$disposal" = delete ]; then
			step "kind-down" bash "$FENCECHECK_ROOT/scripts/kind-down.sh" || log "kind-down failed"
		else
			log "keeping the cluster $KIND_CLUSTER_NAME (${disposal#keep: }); KUBECONFIG=$KUBECONFIG"
		fi
	fi
	[ -f "$REPORTS/summary.md" ] && head -n 3 "$REPORTS/summary.md" >&2
	if [ "$rc" != 0 ] && [ -s "$REPORTS/recheck.txt" ]; then
		log "not as expected (from $REPORTS/recheck.txt):"
		unexpected_results "$REPORTS/recheck.txt" >&2
	fi
	log "reports: $REPORTS (index.html, summary.md, junit.xml); exit $rc"
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The suite's test binary is built beside the bring-up, not after it (go
# test would vet and link it on the critical path: ~4 s warm).
log "building the suite's test binary beside the bring-up (log: $REPORTS/suite-build.log)"
mkdir -p "$(dirname "$SUITE_BIN")"
(cd "$FENCECHECK_ROOT" && go test -c -tags conformance -o "$SUITE_BIN" ./conformance/suite/) >"$REPORTS/suite-build.log" 2>&1 &
SUITE_BUILD_PID=$!
if [ -n "$KUBECONFIG_ARG" ]; then
	[ -r "$KUBECONFIG_ARG" ] || die "--kubeconfig $KUBECONFIG_ARG is not readable"
	KUBECONFIG_ARG=$(realpath "$KUBECONFIG_ARG") # the suite runs in its package's directory
	export KUBECONFIG=$KUBECONFIG_ARG
	if [ -n "$IMAGE_REPO" ]; then
		log "using the cluster of $KUBECONFIG, images pushed to $IMAGE_REPO and run by digest (no kind-up, no kind load)"
		push=(reconciler sink witness chaos-agent probe)
		[ ${#CONTROLLER_IMAGE[@]} = 0 ] || { c=${CONTROLLER_IMAGE[0]%/}; push+=("${c##*/}"); }
		if [ "$SKIP_IMAGES" = 0 ]; then
			step "images (archives only)" bash "$FENCECHECK_ROOT/scripts/images.sh" --no-load reconciler sink witness chaos-agent probe "${CONTROLLER_IMAGE[@]}"
		fi
		SUITE_ARGS=(--image-repo "$IMAGE_REPO" --push-images "$(IFS=,; echo "${push[*]}")" "${SUITE_ARGS[@]}")
	elif [ "$LOAD_CONTROLLER_IMAGE" = 1 ]; then
		step "the controller's image ${CONTROLLER_IMAGE[0]} (build, kind load into $KIND_CLUSTER_NAME)" bash "$FENCECHECK_ROOT/scripts/images.sh" "${CONTROLLER_IMAGE[@]}"
		log "using the cluster of $KUBECONFIG (no kind-up; the controller's image loaded, the others must already be there)"
	else
		log "using the cluster of $KUBECONFIG (no kind-up, no image loading; the images must already be there)"
	fi
else
	KIND_UP_OUTCOME=$(mktemp)
	export FENCECHECK_KIND_UP_OUTCOME=$KIND_UP_OUTCOME
	IMAGES=(reconciler sink witness chaos-agent probe "${CONTROLLER_IMAGE[@]}")
	if [ "$SKIP_IMAGES" = 0 ]; then
		# The archives need no cluster: build them while it comes up.
		log "building the image archives beside kind-up (log: $REPORTS/images-build.log)"
		bash "$FENCECHECK_ROOT/scripts/images.sh" --no-load "${IMAGES[@]}" >"$REPORTS/images-build.log" 2>&1 &
		IMAGES_PID=$!
	fi
	# The images load after the nodes are Ready, not beside it: on 2 cores
	# the import and the starting nodes slowed each other (kind-up 101 s
	# with the load inside, against 72 s + 9 s one after the other).
	step "kind-up" bash "$FENCECHECK_ROOT/scripts/kind-up.sh"
	if [ "$SKIP_IMAGES" = 0 ]; then
		wait_images_pid=$IMAGES_PID IMAGES_PID=
		wait "$wait_images_pid" || { cat "$REPORTS/images-build.log" >&2; die "building the image archives failed (log above, and in $REPORTS/images-build.log)"; }
		step "images" bash "$FENCECHECK_ROOT/scripts/images.sh" --no-build "${IMAGES[@]}"
	fi
	if [ "$CHAOS" = chaos-mesh ]; then
		CHAOS_MESH_UP=1
		step "Chaos Mesh in place of our agent" bash "$FENCECHECK_ROOT/scripts/chaos-mesh/install.sh" up
	fi
fi

# gotestsum at the version tools/go.mod pins (a readable summary), built
# once into the cache; else the binary's -test.v output through test2json.
RUNNER=()
if GOTESTSUM=$(gotestsum_bin); then
	RUNNER=("$GOTESTSUM" --format testname --jsonfile "$REPORTS/test-output.json" --junitfile "$REPORTS/go-junit.xml" --raw-command --)
	log "running the suite with $("$GOTESTSUM" --version) (pinned in tools/go.mod)"
else
	log "gotestsum (tools/go.mod) did not build: running the suite's binary with -test.v (test2json for the JSON copy)"
fi

build_pid=$SUITE_BUILD_PID SUITE_BUILD_PID=
wait "$build_pid" || { cat "$REPORTS/suite-build.log" >&2; die "building the suite (go test -c -tags conformance ./conformance/suite/) failed (log above)"; }
# The binary runs where go test would run it, in its package's directory.
ARGS=(-test.timeout "$TIMEOUT"
	--kubeconfig "$KUBECONFIG" --reports "$REPORTS" --run-id "$RUN_ID" --seed "$SEED" "${SUITE_ARGS[@]}")
PKG=github.com/fencecheck/fencecheck/conformance/suite
rc=0
cd "$FENCECHECK_ROOT"
if [ ${#RUNNER[@]} = 0 ]; then
	# Verbose output on the console and in suite.log; test2json keeps a
	# machine-readable copy.
	step "suite" bash -c 'cd conformance/suite && exec "$@"' suite "$SUITE_BIN" -test.v "${ARGS[@]}" 2>&1 | tee "$REPORTS/suite.log" | tee >(go tool test2json -t -p "$PKG" >"$REPORTS/test-output.json") || rc=${PIPESTATUS[0]}
else
	step "suite" "${RUNNER[@]}" bash -c 'cd conformance/suite && exec go tool test2json -t -p "$0" "$@"' "$PKG" "$SUITE_BIN" -test.v=test2json "${ARGS[@]}" 2>&1 | tee "$REPORTS/suite.log" || rc=${PIPESTATUS[0]}
fi

if [ -f "$REPORTS/verdicts.json" ]; then
	# The same verdicts, offline, from history.json (exit 3 if they differ).
	if ! step "re-check offline" go run ./cmd/fencecheck check "$REPORTS" >"$REPORTS/recheck.txt" 2>&1; then
		log "offline re-check: see $REPORTS/recheck.txt"
		[ "$rc" != 0 ] || rc=1
	fi
fi

exit "$rc"
