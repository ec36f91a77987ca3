#!/usr/bin/env bash
# bench/cpu.sh [--top N] [--out FILE] -- COMMAND [ARGS...]
# Where the machine's CPU goes while COMMAND runs: every process is sampled
# once a second (pidstat, from sysstat, installed if missing) and the
# CPU-seconds are summed by process name (the kernel's 15-character comm:
# kube-apiserver, etcd, kubelet, containerd-shim, reconciler, sink,
# witness, conformance.tes for the suite's binary ...). Prints the machine's
# busy CPU against cores x wall, then the top N names (default 15) with
# their share of the busy CPU. Processes that start and exit within one
# second are not seen (their share is in "unattributed"). COMMAND's own
# exit code is returned; its output passes through.
set -uo pipefail
source "$(dirname "$0")/../scripts/lib/common.sh"

TOP=15 OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--top) TOP=${2:?--top needs a number}; shift 2
		[[ "$TOP" =~ ^[1-9][0-9]*$ ]] || die "--top needs a positive number, got '$TOP'" ;;
	--out) OUT=${2:?--out needs a file}; shift 2 ;;
	-h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	*) die "unknown argument: $1 (usage: bench/cpu.sh [--top N] [--out FILE] -- COMMAND...)" ;;
	esac
done
[ $# -gt 0 ] || die "no command to measure (usage: bench/cpu.sh [--top N] [--out FILE] -- COMMAND...)"
if ! command -v pidstat >/dev/null; then
	log "pidstat not found: installing sysstat with apt"
	apt-get install -y -qq sysstat >/dev/null || die "apt-get install sysstat failed"
fi

samples=${OUT:-$(mktemp /tmp/fc-cpu.XXXX)}
# /proc/stat's first line: user nice system idle iowait irq softirq steal (jiffies).
cpustat() { awk '/^cpu /{print $2+$3, $4, $7+$8, $9, $5+$6; exit}' /proc/stat; }
read -r user0 sys0 irq0 steal0 idle0 < <(cpustat)
t0=$(date +%s.%N)
# -h: one line a process a sample; -H: epoch seconds. LC_ALL=C: a dot for decimals.
LC_ALL=C stdbuf -oL pidstat -u -h -H 1 >"$samples" 2>/dev/null &
sampler=$!
"$@"
rc=$?
kill -INT "$sampler" 2>/dev/null # pidstat flushes its last sample on SIGINT
wait "$sampler" 2>/dev/null
read -r user1 sys1 irq1 steal1 idle1 < <(cpustat)
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
cores=$(nproc)
hz=$(getconf CLK_TCK)

# %CPU is the 8th field of pidstat -u -h (Time UID PID %usr %system %guest %wait %CPU CPU Command).
# Busy is user + system + irq (softirq: the network's packets): steal is the
# hypervisor's, not this machine's work, and is shown apart.
awk -v user="$(( user1 - user0 ))" -v sys="$(( sys1 - sys0 ))" -v irq="$(( irq1 - irq0 ))" -v steal="$(( steal1 - steal0 ))" -v hz="$hz" -v wall="$wall" -v cores="$cores" -v top="$TOP" '
	/^#/ || NF < 10 { next }
	{ cpu[$10] += $8 / 100; seen += $8 / 100 }
	END {
		b = (user + sys + irq) / hz
		if (b <= 0 || wall <= 0) { print "RESULT no CPU time measured (the command ended at once)"; exit }
		printf "RESULT wall_s %.1f busy_cpu_s %.1f of %.1f (%.0f%% of %d cores): user %.1f, system %.1f, irq %.1f; steal %.1f\n", wall, b, wall * cores, 100 * b / (wall * cores), cores, user / hz, sys / hz, irq / hz, steal / hz
		n = 0
		for (k in cpu) names[++n] = k
		# sort names by CPU, largest first
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (cpu[names[j]] > cpu[names[i]]) { t = names[i]; names[i] = names[j]; names[j] = t }
		printf "%-16s %9s %7s\n", "process", "cpu_s", "share"
		for (i = 1; i <= n && i <= top; i++) printf "%-16s %9.1f %6.1f%%\n", names[i], cpu[names[i]], 100 * cpu[names[i]] / b
		rest = 0
		for (i = top + 1; i <= n; i++) rest += cpu[names[i]]
		printf "%-16s %9.1f %6.1f%%\n", "(the rest)", rest, 100 * rest / b
		printf "%-16s %9.1f %6.1f%%\n", "unattributed", b - seen, 100 * (b - seen) / b
	}' "$samples"
[ -n "$OUT" ] || rm -f "$samples"
exit $rc
