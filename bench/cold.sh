#!/usr/bin/env bash
# bench/cold.sh: the cold paths a fresh machine waits for, one after the
# other on an idle machine, with where their time goes:
#   1. the first verdict without a cluster (bench/first-verdict.sh: a clone,
#      empty caches, `make conformance TARGET=local`, one scenario);
#   2. a cold kind-up (bench/kind-up.sh --cold --rounds 0: empty caches, a
#      salted node image, the whole scripts/kind-up.sh).
# Each prints its steps (STEP: one line per step with its duration; lanes run
# side by side) and the profile of its go build (PROFILE); this script prints
# the machine and a CPU calibration first, and a summary last.
#
#   --only first-verdict|kind-up   run one of the two
#   --keep                         keep the cold kind-up's outputs in the cache
#                                  (bench/kind-up.sh --keep)
#
# Long: 20 to 40 min on 2 cores. Run nothing else beside it.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"

ONLY="" KEEP=()
while [ $# -gt 0 ]; do
	case "$1" in
	--only) ONLY=${2:?--only needs first-verdict or kind-up}; shift
		case "$ONLY" in first-verdict | kind-up) ;; *) die "--only: first-verdict or kind-up, got '$ONLY'" ;; esac ;;
	--keep) KEEP=(--keep) ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
	shift
done

out=$(mktemp /tmp/fc-cold.XXXX)
trap 'rm -f "$out"' EXIT
echo "MACHINE $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
bash "$FENCECHECK_ROOT/bench/calibrate.sh"
echo "LOAD before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$ONLY" != kind-up ]; then
	echo "== first verdict, cold"
	bash "$FENCECHECK_ROOT/bench/first-verdict.sh" | grep -v -E '^(MACHINE|CALIBRATE)' | tee -a "$out"
fi
if [ "$ONLY" != first-verdict ]; then
	echo "== kind-up, cold"
	bash "$FENCECHECK_ROOT/bench/kind-up.sh" --cold --rounds 0 "${KEEP[@]}" | tee -a "$out"
fi
echo "== summary (seconds)"
grep '^RESULT' "$out" | sed 's/^RESULT /  /'
