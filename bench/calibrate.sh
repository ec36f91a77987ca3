#!/usr/bin/env bash
# bench/calibrate.sh: a CPU calibration of a few seconds to put beside any
# figure (our machines differ about 3x; meaningless on a busy machine): one core hashes 1 GiB of zeros
# with sha256sum. Prints CALIBRATE sha256_mb_per_s N (more is faster).
set -euo pipefail
start=$(date +%s.%N)
head -c 1G /dev/zero | sha256sum >/dev/null
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN{printf "CALIBRATE sha256_mb_per_s %.0f (1024 MiB in %.1f s)\n", 1024/(b-a), b-a}'
