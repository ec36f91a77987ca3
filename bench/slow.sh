#!/usr/bin/env bash
# bench/slow.sh: run a command as if on a slower machine, for figures the
# slower machines would give when none is at hand. The command and all its
# children run in a cgroup (v1 cpu controller) that may use 2/F of the two
# cores (CFS bandwidth: a quota of 2/F of each short period), so two busy
# threads each run at about 1/F speed, as on two cores F times slower.
#
#   bench/slow.sh [--factor F] [--period-us P] -- COMMAND [ARG...]
#     --factor F      how much slower (default 2.4: the compiler's CPU per
#                     package was 0.44 s on the 2026-12-02/-06 machines and
#                     0.18 s on the 2026-12-07 one)
#     --period-us P   the bandwidth period (default 10000: short, so a thread
#                     is held back in slices of milliseconds, not tenths)
#
# First it prints the factor it gets: one parallel compile (go build -p 2 of
# cmd/gofmt from an empty build cache) outside and inside the cgroup. Last,
# the command's exact CPU (a cpuacct cgroup beside it) and the floor that CPU
# sets at 2/F cores.
# Limits, which make it an estimate, not the slower machine:
#   - a single busy thread gets up to 2/F of a core, not 1/F: serial steps
#     run faster than on the slower machine (the estimate is low there);
#   - containers docker starts live in docker's cgroups, not this one: a kind
#     node runs at full speed (the estimate is low there too);
#   - I/O, downloads and timers are not slowed.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"

factor=2.4 period=10000
while [ $# -gt 0 ]; do
	case "$1" in
	--factor) factor=${2:?--factor needs a number}; shift ;;
	--period-us) period=${2:?--period-us needs microseconds}; shift ;;
	--) shift; break ;;
	-h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
	shift
done
[ $# -gt 0 ] || die "no command to run (bench/slow.sh [--factor F] -- COMMAND ...)"
[[ $factor =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v f="$factor" 'BEGIN{exit !(f >= 1)}' || die "--factor must be a number >= 1, got '$factor'"
root=/sys/fs/cgroup/cpu
[ -w "$root/tasks" ] || die "no writable cgroup v1 cpu controller at $root (this script needs root and cgroup v1)"

cg="$root/fencecheck-slow.$$"
# Its twin under cpuacct (a hierarchy of its own here) counts the command's
# CPU exactly; /proc/stat samples at each tick, and a quota throttles on
# ticks: two busy threads at 0.83 cores read there as 1.05.
# Where the two controllers share one hierarchy, the cgroup is its own twin.
acct=/sys/fs/cgroup/cpuacct/fencecheck-slow.$$
[ -w "${acct%/*}/tasks" ] || acct=""
[ "$(readlink -f "${acct%/*}")" != "$(readlink -f "$root")" ] || acct=$cg
# groups: the cgroups the command joins, each made here and removed at exit.
groups=("$cg")
[ -z "$acct" ] || [ "$acct" = "$cg" ] || groups+=("$acct")
mkdir "${groups[@]}"
# The cgroups can only be removed once empty: by then every child has exited.
trap 'rmdir "${groups[@]}" 2>/dev/null || log "cgroup ${groups[*]} still has tasks; remove it by hand"' EXIT
quota=$(awk -v f="$factor" -v p="$period" -v n="$(nproc)" 'BEGIN{printf "%d", n * p / f}')
echo "$period" >"$cg/cpu.cfs_period_us"
echo "$quota" >"$cg/cpu.cfs_quota_us"

# in_cgroup CMD...: run CMD with the cgroup's quota (it joins the cgroups
# first, so every child it starts is in them too).
in_cgroup() { sh -c 'for g in $1; do echo $$ >"$g/tasks"; done; shift; exec "$@"' sh "${groups[*]}" "$@"; }
acct_s() { [ -z "$acct" ] || awk '{printf "%.1f", $1 / 1e9}' "$acct/cpuacct.usage"; }

# compile_s: wall seconds of a two-way parallel compile from an empty cache.
compile_s() {
	local cache t
	cache=$(mktemp -d /tmp/fc-slow-cache.XXXX)
	t=$(now)
	GOCACHE=$cache GOFLAGS= go build -p 2 -o /dev/null cmd/gofmt
	secs "$t" "$(now)"
	rm -rf "$cache"
}
echo "MACHINE $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"
log "slow: cgroup $cg, quota ${quota}us of every ${period}us ($(nproc) cores / $factor)"
full=$(compile_s)
slow=$(in_cgroup bash -c "$(declare -f compile_s now secs); compile_s")
echo "SLOW factor_asked $factor compile_s full $full emulated $slow factor_got $(awk -v a="$slow" -v b="$full" 'BEGIN{printf "%.2f", a/b}')"
t=$(now) c0=$(acct_s)
rc=0
in_cgroup "$@" || rc=$?
wall=$(secs "$t" "$(now)")
echo "SLOW command rc $rc wall_s $wall"
# The floor: the command's own CPU at the quota's cores (docker's
# containers run in docker's cgroups, outside both).
[ -z "$acct" ] || awk -v a="$c0" -v b="$(acct_s)" -v q="$quota" -v p="$period" -v w="$wall" 'BEGIN{
	c = b - a; k = q / p; printf "SLOW command cpu_s %.0f (its tasks, cpuacct); at %.2f cores that is a floor of %.0f s; the wall is %.2fx it\n", c, k, c / k, w / (c / k) }'
exit "$rc"
