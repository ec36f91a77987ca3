#!/usr/bin/env bash
# slowest-tests.sh [N]: the N (default 20) slowest tests of the last
# `make test`, and every package's time, from reports/test-times/*.json
# (kept by scripts/go-test.sh). Figures are only comparable on one machine:
# it prints which.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"
files=("$FENCECHECK_ROOT"/reports/test-times/*.json)
[ -e "${files[0]}" ] || die "no reports/test-times/*.json: run make test (or one of its parts) first"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; files: $(ls -l --time-style=+%F.%T "${files[@]}" | awk '{print $6}' | sort | sed -n '1p;$p' | paste -sd' ' | sed 's/ / to /')"
cd "$FENCECHECK_ROOT" && go run ./bench/slowtests -n "${1:-20}" "${files[@]}"
