#!/usr/bin/env bash
# bench/kind-up.sh: measure scripts/kind-up.sh against a bare `kind create
# cluster` with the same node image and config, in the same run, on a
# separate cluster (fencecheck-bench) so the project's cluster is untouched.
#
#   --cold     also time a cold kind-up.sh from nothing: empty Go build and
#              module caches, empty $FENCECHECK_CACHE (temporary), a salted
#              image tag so nothing cached is reused (long: 7-20 min); it
#              prints the machine's busy CPU over the run, the floor that
#              sets on these cores, and the cores busy during each step
#   --keep     with --cold: move the cold build's outputs (node binaries,
#              components, root filesystems: the same bytes a warm build
#              would make) into $FENCECHECK_CACHE, so the next build reuses them
#   --rounds N warm kind-up / bare create pairs (default 1)
#
# Prints one line per measurement and the ratio warm kind-up / bare create.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
source "$FENCECHECK_ROOT/scripts/lib/kind.sh"

COLD=0 KEEP=0 ROUNDS=1
while [ $# -gt 0 ]; do
	case "$1" in
	--cold) COLD=1 ;;
	--keep) KEEP=1 ;;
	--rounds) ROUNDS=${2:?--rounds needs a number}; shift
		[[ "$ROUNDS" =~ ^[0-9]+$ ]] || die "--rounds needs a number, got '$ROUNDS'" ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
	shift
done

# cpu_sample: "EPOCH BUSY" with BUSY the whole machine's busy CPU so far,
# in seconds (/proc/stat: user + nice + system + irq + softirq; idle, iowait
# and steal are not work done here).
cpu_sample() {
	awk -v t="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" '/^cpu /{printf "%s %.2f\n", t, ($2+$3+$4+$7+$8)/hz; exit}' /proc/stat
}

# cpu_between SAMPLES FROM TO: "CPU_S CORES", the busy CPU between the
# samples nearest FROM and TO (epoch seconds) and the cores it kept busy.
cpu_between() {
	awk -v a="$2" -v b="$3" '
		$1 <= a || !n0 { t0 = $1; b0 = $2; n0 = 1 }
		!n1 && $1 >= b { t1 = $1; b1 = $2; n1 = 1 }
		{ tl = $1; bl = $2 }
		END { if (!n1) { t1 = tl; b1 = bl }
		      if (t1 > t0) printf "%.0f %.2f\n", b1 - b0, (b1 - b0) / (t1 - t0) }' "$1"
}

# cpu_report SAMPLES T0 T1 LOG: the whole run's CPU against its floor on
# these cores (CPU / cores: no order of the same work ends sooner), and each
# step of LOG (its "<== NAME done in Ns" lines) with how busy the cores were
# while it ran: where they were idle is where reordering could still win.
cpu_report() {
	local samples=$1 t0=$2 t1=$3 logfile=$4 cpu cores n; n=$(nproc)
	read -r cpu cores < <(cpu_between "$samples" "$t0" "$t1") || { log "no CPU samples in $samples"; return 0; }
	echo "RESULT cold_kind_up_cpu_s $cpu (the whole machine's busy CPU; $cores of $n cores busy on average)"
	# Under bench/slow.sh's quota the tick-sampled figures read high: it
	# prints its command's exact CPU itself (SLOW command cpu_s).
	local cg; cg=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' /proc/self/cgroup)
	[ "${cg:-/}" = / ] || [ "$(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us" 2>/dev/null || echo -1)" = -1 ] ||
		echo "RESULT (under a CPU quota: these busy figures are tick-sampled and read high; see SLOW command cpu_s)"
	awk -v c="$cpu" -v n="$n" -v w="$(secs "$t0" "$t1")" \
		'BEGIN{printf "RESULT cold_kind_up_floor_s %.0f (that CPU on %d cores); the wall is %.2fx it\n", c/n, n, w/(c/n)}'
	local line hms dur end day; day=$(date -u +%F)
	grep -E '<== .* done in [0-9]+s' "$logfile" | while IFS= read -r line; do
		hms=${line:1:8} dur=${line##* done in }; dur=${dur%s}
		end=$(date -u -d "$day $hms" +%s)
		# A run across midnight UTC: the line's day is the one before.
		[ "$end" -le "$(date +%s)" ] || end=$((end - 86400))
		if [ "$dur" -ge 10 ]; then
			read -r cpu cores < <(cpu_between "$samples" "$((end - dur))" "$end") || cores="?"
			echo "STEP ${line#*<== } ($cores cores busy)"
		else
			echo "STEP ${line#*<== }"
		fi
	done
}

if [ "$COLD" = 1 ]; then
	# From nothing: empty FENCECHECK_CACHE, Go build cache and module cache
	# (modules come from the proxy again), a salted node-image tag; the whole
	# kind-up.sh on the bench cluster, so the figure is what a fresh machine
	# waits for. The node image build's per-step lines go to the log.
	cold_cache=$(mktemp -d /tmp/fc-bench-cold.XXXX)
	log "cold kind-up: FENCECHECK_CACHE=$cold_cache, empty GOCACHE and GOMODCACHE, salted tag; log /tmp/fc-bench-cold.log"
	salt="bench-$(date +%s)"
	# The node build's action graph says where its time went (cmd/buildprofile,
	# built here with the caller's caches before the clock starts).
	go build -o "$cold_cache/buildprofile" "$FENCECHECK_ROOT/cmd/buildprofile"
	# Sampling, not waiting: one /proc/stat line a second, read afterwards.
	# It ends at its next turn once the stop file is there (a killed loop
	# would leave its sleep behind, in bench/slow.sh's cgroup).
	while [ ! -e "$cold_cache/cpu.stop" ]; do cpu_sample; sleep 1; done >"$cold_cache/cpu.samples" &
	sampler=$!
	t=$(now)
	FENCECHECK_CACHE="$cold_cache" GOCACHE="$cold_cache/gocache" GOMODCACHE="$cold_cache/gomod" GOFLAGS="-modcacherw ${GOFLAGS:-}" \
		K8S_BINS_ACTIONGRAPH="$cold_cache/actiongraph.json" \
		FENCECHECK_NODEIMAGE_SALT="$salt" KIND_CLUSTER_NAME=fencecheck-bench KUBECONFIG="$cold_cache/kubeconfig" \
		bash "$FENCECHECK_ROOT/scripts/kind-up.sh" 2> >(tee /tmp/fc-bench-cold.log >&2) >/dev/null ||
		{ touch "$cold_cache/cpu.stop"; die "cold kind-up failed: see /tmp/fc-bench-cold.log"; }
	t_end=$(now)
	touch "$cold_cache/cpu.stop"; wait "$sampler"
	echo "RESULT cold_kind_up_s $(secs "$t" "$t_end")"
	cpu_report "$cold_cache/cpu.samples" "$t" "$t_end" /tmp/fc-bench-cold.log
	"$cold_cache/buildprofile" --top 8 "$cold_cache/actiongraph.json" | sed 's/^/PROFILE /' ||
		log "no profile of the node build (was it cached?)"
	"$cold_cache/bin/kind" delete cluster --name fencecheck-bench >/dev/null 2>&1 || true
	# The salt is in the node image's hash (not its tag) and in the base's tag.
	cold_image=$(sed -n 's/.*node image \(\S*\) built in .*/\1/p' /tmp/fc-bench-cold.log)
	docker rmi $cold_image $(docker images --format '{{.Repository}}:{{.Tag}}' | grep -- "$salt") >/dev/null 2>&1 || true
	if [ "$KEEP" = 1 ]; then
		mkdir -p "$FENCECHECK_CACHE/k8s-bins" "$FENCECHECK_CACHE/nodeimage"
		for d in "$cold_cache"/k8s-bins/*/ "$cold_cache"/nodeimage/*; do
			d=${d%/} kind=${d%/*}; kind=${kind##*/}
			[ -e "$FENCECHECK_CACHE/$kind/${d##*/}" ] || { mv "$d" "$FENCECHECK_CACHE/$kind/" && log "kept $kind/${d##*/}"; }
		done
	fi
	rm -rf "$cold_cache"
fi
# --rounds 0: nothing warm to measure, so nothing to build (a build of the
# working tree here ran 20 min behind the next measurement once).
[ "$ROUNDS" -gt 0 ] || exit 0

export KIND_CLUSTER_NAME=fencecheck-bench
export KUBECONFIG="$FENCECHECK_CACHE/kubeconfig-fencecheck-bench"
ensure_kind_cli
image=$(bash "$FENCECHECK_ROOT/scripts/nodeimage/build.sh")
"$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || true

for ((r = 1; r <= ROUNDS; r++)); do
	t=$(now)
	bash "$FENCECHECK_ROOT/scripts/kind-up.sh" 2>"$FENCECHECK_CACHE/logs/bench-kind-up.log" ||
		die "kind-up.sh failed: see $FENCECHECK_CACHE/logs/bench-kind-up.log"
	up=$(secs "$t" "$(now)")
	docker stats --no-stream --format '{{.Name}} {{.MemUsage}}' $(docker ps -q --filter "label=io.x-k8s.kind.cluster=$KIND_CLUSTER_NAME") |
		sed 's/^/MEM /'
	t=$(now)
	bash "$FENCECHECK_ROOT/scripts/kind-up.sh" 2>>"$FENCECHECK_CACHE/logs/bench-kind-up.log"
	reuse=$(secs "$t" "$(now)")
	"$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1

	t=$(now)
	"$KIND" create cluster --name "$KIND_CLUSTER_NAME" --image "$image" \
		--config "$FENCECHECK_CACHE/kind-config-$KIND_CLUSTER_NAME.yaml" --kubeconfig "$KUBECONFIG" --wait 300s >/dev/null 2>&1 ||
		die "bare kind create cluster failed"
	bare=$(secs "$t" "$(now)")
	"$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1
	echo "RESULT round $r: warm_kind_up_s $up  reuse_healthy_s $reuse  bare_kind_create_s $bare  ratio $(awk -v a="$up" -v b="$bare" 'BEGIN{printf "%.2f", a/b}') (goal <= 1.3)"
done
rm -f "$KUBECONFIG"
