#!/usr/bin/env bash
# witness.sh [ROUNDS]: what the witness adds to a sink write, measured
# against a direct connection in the same run. Each round alternates PUTs
# straight to an in-process upstream and through a witness to the same
# upstream (loopback), for two upstreams: the reference sink (bbolt) and
# echo (a fixed answer: the witness's own cost). Prints the medians over
# the rounds. Goal: p50 added < 1 ms. Env: BENCH_TIME (1000x PUT pairs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
case "${1:-}" in
-h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
rounds="${1:-5}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/witness.sh: ROUNDS must be a positive number, got '$rounds'" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "bench/witness.sh: building the benchmark binary..." >&2
go test -c -o "$tmp/witness.test" ./witness/
for i in $(seq 1 "$rounds"); do
	echo "bench/witness.sh: round $i/$rounds" >&2
	"$tmp/witness.test" -test.run '^$' -test.bench '^BenchmarkPut$' -test.benchtime "${BENCH_TIME:-1000x}" | grep -E '^BenchmarkPut/' | tee -a "$tmp/out" >&2
done
# Lines: "BenchmarkPut/echo-2 1000 5e5 ns/op 1.4e5 direct_ns/op 190 p50_added_µs 900 p99_added_µs 2.6 ratio 3.6e5 witness_ns/op"
awk '
$1 ~ /^BenchmarkPut\// {
	u = $1; sub(/^BenchmarkPut\//, "", u); sub(/-[0-9]+$/, "", u)
	k = n[u]++
	for (i = 3; i < NF; i += 2) v[u, $(i + 1), k] = $i
}
function median(u, m,   i, j, t, c) {
	c = n[u]
	for (i = 0; i < c; i++) a[i] = v[u, m, i]
	for (i = 0; i < c; i++) for (j = i + 1; j < c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (c % 2) ? a[int(c / 2)] : (a[c / 2 - 1] + a[c / 2]) / 2
}
END {
	if (length(n) == 0) { print "bench/witness.sh: no benchmark output" > "/dev/stderr"; exit 1 }
	printf "%-9s %6s %12s %12s %7s %13s %13s  %s\n", "upstream", "rounds", "direct µs", "witness µs", "ratio", "p50 added µs", "p99 added µs", "goal p50 added < 1000 µs (median)"
	split("sink echo", ups, " ")
	for (x = 1; x <= 2; x++) {
		u = ups[x]
		if (!(u in n)) continue
		p50 = median(u, "p50_added_µs")
		printf "%-9s %6d %12.1f %12.1f %7.2f %13.1f %13.1f  %s\n", u, n[u], median(u, "direct_ns/op") / 1e3, median(u, "witness_ns/op") / 1e3,
			median(u, "ratio"), p50, median(u, "p99_added_µs"), (p50 < 1000 ? "met" : "NOT met")
	}
}' "$tmp/out"
