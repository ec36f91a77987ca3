#!/usr/bin/env bash
# Fenced write throughput of the sink's stores against the same store with
# fencing off, measured in the same run (Go benchmarks, sub-benchmarks
# alternating with -count), printed as ratios. Goal: fenced >= 0.9x unfenced.
#
#   bench/sink.sh            bolt and PostgreSQL (starts PostgreSQL via scripts/test-integration-sink.sh --start-pg)
#   bench/sink.sh bolt       bolt only
# Env: BENCH_COUNT (5 rounds), BENCH_TIME (200x writes per round)
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
		go test -run '^$' -bench 'BenchmarkWrites' -benchtime "$TIME" -count "$COUNT" ./fixtures/sink/boltstore/ | sed 's/^/bolt /' >>"$out"
		;;
	postgres)
		eval "$(bash scripts/test-integration-sink.sh --start-pg)"
		echo "bench: postgres ($COUNT rounds x $TIME) ..." >&2
		go test -tags integration -run '^$' -bench 'BenchmarkWrites' -benchtime "$TIME" -count "$COUNT" ./fixtures/sink/pgstore/ | sed 's/^/postgres /' >>"$out"
		;;
	*) echo "bench/sink.sh: unknown store $s (bolt, postgres)" >&2; exit 2 ;;
	esac
done

# Lines look like: "bolt BenchmarkWrites/serial/fenced-2  200  3547839 ns/op".
# Median ns/op per (store, shape, mode); ratio = unfenced ns / fenced ns =
# fenced throughput / unfenced throughput.
awk '
$2 ~ /^BenchmarkWrites\// && $5 == "ns/op" {
	split($2, p, "/"); mode = p[3]; sub(/-[0-9]+$/, "", mode)
	k = $1 " " p[2] " " mode; n[k]++; v[k, n[k]] = $4
}
function median(k,   i, j, t, m) {
	m = n[k]
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
	printf "%-9s %-9s %14s %14s %8s  %s\n", "store", "shape", "fenced w/s", "unfenced w/s", "ratio", "goal >= 0.90"
	split("bolt postgres", stores, " "); split("serial parallel", shapes, " ")
	for (s = 1; s <= 2; s++) for (h = 1; h <= 2; h++) {
		f = stores[s] " " shapes[h] " fenced"; u = stores[s] " " shapes[h] " unfenced"
		if (!(f in n) || !(u in n)) continue
		mf = median(f); mu = median(u); r = mu / mf
		printf "%-9s %-9s %14.0f %14.0f %8.2f  %s\n", stores[s], shapes[h], 1e9 / mf, 1e9 / mu, r, (r >= 0.9 ? "met" : "NOT met")
	}
}' "$out"
