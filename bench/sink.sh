#!/usr/bin/env bash
# Fenced write throughput of the sink's stores against the same store with
# fencing off, measured in the same run (Go benchmarks, sub-benchmarks
# alternating with -count), printed as ratios. Goal: fenced >= 0.9x unfenced.
# For bolt also a stale reject's time against a commit's, interleaved.
#
#   bench/sink.sh            bolt and PostgreSQL (starts PostgreSQL via scripts/test-integration-sink.sh --start-pg)
#   bench/sink.sh bolt       bolt only
# Env: BENCH_COUNT (5 rounds), BENCH_TIME (200x write pairs per round)
# In the parallel shape w/s is per writer (GOMAXPROCS writers share the store).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
COUNT="${BENCH_COUNT:-5}"
TIME="${BENCH_TIME:-200x}"
stores=("${@:-bolt postgres}")
read -r -a stores <<<"${stores[*]}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for s in "${stores[@]}"; do
	case "$s" in
	bolt)
		echo "bench: bolt ($COUNT rounds x $TIME) ..." >&2
		go test -run '^$' -bench 'BenchmarkWrites|BenchmarkStaleReject' -benchtime "$TIME" -count "$COUNT" ./fixtures/sink/boltstore/ | sed 's/^/bolt /' >>"$out"
		;;
	postgres)
		eval "$(bash scripts/test-integration-sink.sh --start-pg)"
		echo "bench: postgres ($COUNT rounds x $TIME) ..." >&2
		go test -tags integration -run '^$' -bench 'BenchmarkWrites' -benchtime "$TIME" -count "$COUNT" ./fixtures/sink/pgstore/ | sed 's/^/postgres /' >>"$out"
		;;
	*) echo "bench/sink.sh: unknown store $s (bolt, postgres)" >&2; exit 2 ;;
	esac
done

# Lines look like: "bolt BenchmarkWrites/serial-2 200 5e6 ns/op 290 fenced_w/s 300 unfenced_w/s 0.97 ratio".
# Each line already compares fenced and unfenced writes interleaved in the
# same loop; print the median over the rounds.
awk '
$2 ~ /^BenchmarkWrites\// {
	shape = $2; sub(/^BenchmarkWrites\//, "", shape); sub(/-[0-9]+$/, "", shape)
	k = $1 " " shape; n[k]++
	for (i = 4; i < NF; i += 2) {
		if ($(i + 1) == "fenced_w/s") f[k, n[k]] = $i
		if ($(i + 1) == "unfenced_w/s") u[k, n[k]] = $i
		if ($(i + 1) == "ratio") r[k, n[k]] = $i
	}
}
$2 ~ /^BenchmarkStaleReject/ {
	for (i = 4; i < NF; i += 2) if ($(i + 1) == "reject/commit") rr[++nr] = $i
}
function median(arr, k,   i, j, t, m) {
	m = n[k]
	for (i = 1; i <= m; i++) a[i] = arr[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
	printf "%-9s %-9s %7s %12s %14s %8s  %s\n", "store", "shape", "rounds", "fenced w/s", "unfenced w/s", "ratio", "goal >= 0.90 (median ratio)"
	split("bolt postgres", stores, " "); split("serial parallel", shapes, " ")
	for (s = 1; s <= 2; s++) for (h = 1; h <= 2; h++) {
		k = stores[s] " " shapes[h]
		if (!(k in n)) continue
		mr = median(r, k)
		printf "%-9s %-9s %7d %12.0f %14.0f %8.3f  %s\n", stores[s], shapes[h], n[k], median(f, k), median(u, k), mr, (mr >= 0.9 ? "met" : "NOT met")
	}
	# A stale reject against a commit, interleaved: it decides under the
	# writer lock but writes nothing (no sync).
	if (nr > 0) {
		for (i = 1; i <= nr; i++) a[i] = rr[i]
		for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		printf "bolt stale reject / commit, median of %d rounds: %.3fx\n", nr, (nr % 2) ? a[(nr + 1) / 2] : (a[nr / 2] + a[nr / 2 + 1]) / 2
	}
}' "$out"
