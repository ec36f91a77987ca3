#!/usr/bin/env bash
# bench/calibrate.sh: a CPU calibration of about 15 seconds to put beside any
# figure (our machines differ about 3x; meaningless on a busy machine).
# Two lines, because the two do not move together across our machines:
#   CALIBRATE sha256_mb_per_s N   one core hashes 1 GiB of zeros (more is faster)
#   CALIBRATE go_compile_s N      one core (-p 1) compiles cmd/gofmt, the
#                                 runtime and its standard packages, from an
#                                 empty build cache (less is faster): what
#                                 every build here is made of
# (2026-12-07, AMD EPYC: 259-279 MB/s, as on the 2026-12-06 machines, whose
# apiserver-only build took 441-556 s; here go_compile_s 9.8-10.4 and the
# same build 206 s: the hash rate alone does not tell the slower machine.)
set -euo pipefail
start=$(date +%s.%N)
head -c 1G /dev/zero | sha256sum >/dev/null
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN{printf "CALIBRATE sha256_mb_per_s %.0f (1024 MiB in %.1f s)\n", 1024/(b-a), b-a}'
cache=$(mktemp -d /tmp/fc-calibrate.XXXX)
trap 'rm -rf "$cache"' EXIT
start=$(date +%s.%N)
GOCACHE=$cache GOFLAGS= /usr/local/go/bin/go build -p 1 -o /dev/null cmd/gofmt
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN{printf "CALIBRATE go_compile_s %.1f (cmd/gofmt on one core, empty build cache)\n", b-a}'
