#!/usr/bin/env bash
# Epoch bridge vs a bare buffered channel, same envelope, same run.
# Prints ns/op and allocs/op of both (median of COUNT runs) and the ratio.
# Goal: ratio <= 1.5, 0 allocs per envelope. Usage: bench/bridge.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-5}"
echo "bench/bridge.sh: running BenchmarkBareChannel and BenchmarkBridge, -count=$count ..." >&2
out="$(go test -run '^$' -bench '^Benchmark(BareChannel|Bridge)$' -benchmem -count "$count" ./fixtures/reconciler/bridge/)"
echo "$out" | grep -E '^Benchmark' >&2
echo "$out" | awk '
  /^BenchmarkBareChannel/ { base[nb++] = $3; balloc = $7 }
  /^BenchmarkBridge/      { br[nr++] = $3;  ralloc = $7 }
  function median(a, n,   i, j, t) {
    for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[int(n/2)] : (a[n/2-1] + a[n/2]) / 2
  }
  END {
    if (nb == 0 || nr == 0) { print "bench/bridge.sh: no benchmark output" > "/dev/stderr"; exit 1 }
    b = median(base, nb); r = median(br, nr)
    printf "bare channel: %.1f ns/envelope, %s allocs/envelope\n", b, balloc
    printf "bridge:       %.1f ns/envelope, %s allocs/envelope\n", r, ralloc
    printf "ratio bridge/bare: %.2fx (goal <= 1.5x)\n", r / b
  }'
