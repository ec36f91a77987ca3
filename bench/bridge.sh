#!/usr/bin/env bash
# bridge.sh [ROUNDS]: the epoch bridge vs a bare buffered channel carrying the
# same envelope, in the same run. Each round runs BenchmarkBridgeVsBare,
# which alternates chunks of 2048 envelopes through the bare channel and the
# bridge, each timed until its last envelope reached the consumer, so load
# on a shared machine hits both alike (two separate benchmarks a second
# apart gave ratios from 0.2x to 3.3x on a loaded machine). The ratio
# reported is the median over rounds of each round's median chunk ratio.
# Goal: <= 1.5x, 0 allocs.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
rounds="${1:-7}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/bridge.sh: ROUNDS must be a positive number, got '$rounds'" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "bench/bridge.sh: building the benchmark binary..." >&2
go test -c -o "$tmp/bridge.test" ./fixtures/reconciler/bridge/
for i in $(seq 1 "$rounds"); do
	echo "bench/bridge.sh: round $i/$rounds" >&2
	"$tmp/bridge.test" -test.run '^$' -test.bench '^BenchmarkBridgeVsBare$' -test.benchmem -test.benchtime 1s | grep -E '^Benchmark' | tee -a "$tmp/out" >&2
done
# Fields: name N ns/op bare bare-unit bridge bridge-unit ratio "ratio" B/op ... allocs/op
awk 'BEGIN { n = 0 }
  /^BenchmarkBridgeVsBare/ {
    for (i = 1; i <= NF; i++) {
      if ($i == "bare-ns/op") bs[n] = $(i-1)
      if ($i == "bridge-ns/op") rs[n] = $(i-1)
      if ($i == "ratio") r[n] = $(i-1)
      if ($i == "allocs/op") alloc = $(i-1)
    }
    n++
  }
  function median(a, k,   i, j, t) {
    for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[int(k/2)] : (a[k/2-1] + a[k/2]) / 2
  }
  END {
    if (n == 0) { print "bench/bridge.sh: no benchmark output" > "/dev/stderr"; exit 1 }
    lo = r[0] + 0; hi = lo
    for (i = 1; i < n; i++) { if (r[i] + 0 < lo) lo = r[i] + 0; if (r[i] + 0 > hi) hi = r[i] + 0 }
    printf "bare channel: %.1f ns/envelope (median)\n", median(bs, n)
    printf "bridge:       %.1f ns/envelope (median), %s allocs/envelope (both paths)\n", median(rs, n), alloc
    printf "ratio bridge/bare: %.2fx median of %d rounds, range %.2fx-%.2fx (goal <= 1.5x)\n", median(r, n), n, lo, hi
  }' "$tmp/out"
