#!/usr/bin/env bash
# bench/verdicts.sh A B: two finished runs (reports/<run-id> directories)
# compared verdict by verdict, on the scenario × check pairs both judged:
# how many agree, and each that differs with both verdicts and what was
# expected (verdicts.json of builds before and after check.Status alike).
# Pairs only one run has (a scenario not runnable there, or
# filtered out) are counted, not compared. Exit 1 if a verdict that was
# expected to pass or fail (not "any") differs.
set -euo pipefail
case "${1:-}" in
-h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 2 ] || { echo "usage: bench/verdicts.sh REPORT_DIR_A REPORT_DIR_B (try --help)" >&2; exit 2; }
for d in "$@"; do
	[ -f "$d/verdicts.json" ] || { echo "bench/verdicts.sh: $d/verdicts.json not found (a reports/<run-id> directory of a finished run)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "bench/verdicts.sh: needs jq (apt-get install -y jq)" >&2; exit 2; }
jq -n -r --slurpfile a "$1/verdicts.json" --slurpfile b "$2/verdicts.json" --arg an "$1" --arg bn "$2" '
  def verdict: if .status then {"pass": "PASS", "violation": "FAIL", "inconclusive": "INCONCLUSIVE"}[.status]
    elif .inconclusive then "INCONCLUSIVE" elif .pass then "PASS" else "FAIL" end;
  def index: map({key: "\(.scenario)/\(.check)", value: .}) | from_entries;
  ($a[0] | index) as $A | ($b[0] | index) as $B
  | ([$A | keys[] | select($B[.] != null)]) as $both
  | ([$both[] | select(($A[.] | verdict) != ($B[.] | verdict))]) as $diff
  | "\($both | length) scenario × check pairs in both runs, \(($both | length) - ($diff | length)) identical, \($diff | length) differ; \([$A | keys[] | select($B[.] == null)] | length) only in \($an), \([$B | keys[] | select($A[.] == null)] | length) only in \($bn)",
    ($diff[] | "  \(.): \($A[.] | verdict) in \($an), \($B[.] | verdict) in \($bn) (expected \($A[.].expected))"),
    (if [$diff[] | select($A[.].expected != "any")] | length > 0 then "DIFFER: a verdict with an expectation changed\n" | halt_error(1) else empty end)'
