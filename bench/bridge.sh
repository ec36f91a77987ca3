#!/usr/bin/env bash
# bridge.sh [ROUNDS]: the epoch bridge vs a bare buffered channel carrying the
# same envelope, in the same run. Each round runs both benchmarks back to
# back (so load changes on a shared machine hit both alike) and the ratio
# reported is the median of the per-round ratios. Goal: <= 1.5x, 0 allocs.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
rounds="${1:-7}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/bridge.sh: ROUNDS must be a positive number, got '$rounds'" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "bench/bridge.sh: building the benchmark binary..." >&2
go test -c -o "$tmp/bridge.test" ./fixtures/reconciler/bridge/
for i in $(seq 1 "$rounds"); do
	echo "bench/bridge.sh: round $i/$rounds" >&2
	"$tmp/bridge.test" -test.run '^$' -test.bench '^Benchmark(BareChannel|Bridge)$' -test.benchmem -test.benchtime 1s | grep -E '^Benchmark' | tee -a "$tmp/out" >&2
done
awk '
  /^BenchmarkBareChannel/ { b = $3; balloc = $7 }
  /^BenchmarkBridge/      { r[n] = $3 / b; bs[n] = b; rs[n] = $3; n++; ralloc = $7 }
  function median(a, k,   i, j, t) {
    for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[int(k/2)] : (a[k/2-1] + a[k/2]) / 2
  }
  END {
    if (n == 0) { print "bench/bridge.sh: no benchmark output" > "/dev/stderr"; exit 1 }
    printf "bare channel: %.1f ns/envelope (median), %s allocs/envelope\n", median(bs, n), balloc
    printf "bridge:       %.1f ns/envelope (median), %s allocs/envelope\n", median(rs, n), ralloc
    printf "ratio bridge/bare: %.2fx median of %d rounds (goal <= 1.5x)\n", median(r, n), n
  }' "$tmp/out"
