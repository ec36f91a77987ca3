# shellcheck shell=bash
# Shared helpers for the infra scripts: logging with timings, the cache
# layout, input hashing. Source it; everything prints to stderr so that a
# script's stdout stays free for its result.

# Always the tree this file is in: a value inherited from another checkout's
# script (bench/first-verdict.sh runs a clone) must not send this one there.
FENCECHECK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FENCECHECK_CACHE="${FENCECHECK_CACHE:-$HOME/.cache/fencecheck}"
KIND_CLUSTER_NAME="${KIND_CLUSTER_NAME:-fencecheck}"
KUBECONFIG="${KUBECONFIG:-$FENCECHECK_CACHE/kubeconfig-$KIND_CLUSTER_NAME}"
export FENCECHECK_ROOT FENCECHECK_CACHE KIND_CLUSTER_NAME KUBECONFIG
export PATH="/usr/local/go/bin:$FENCECHECK_CACHE/bin:$PATH"
# No debug info from any compile: every binary we ship is stripped (-s -w)
# anyway, and DWARF costs 3-9 % of the compiler's CPU (bench/compile-flags.sh).
# One setting for every build, so they keep sharing the standard library's
# compiled packages. A caller's own -gcflags wins.
NO_DWARF=-gcflags=all=-dwarf=false
case " ${GOFLAGS:-} " in
*" -gcflags"*) ;;
*) export GOFLAGS="${GOFLAGS:+$GOFLAGS }$NO_DWARF" ;;
esac
mkdir -p "$FENCECHECK_CACHE"

_fc_t0=$(date +%s)

log() { printf '[%s +%4ss] %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - _fc_t0 ))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# in_parallel FAILED CMD...: run CMD in the background once fewer jobs than
# cores run; a failure appends CMD to the file FAILED (the caller waits for
# all, then reads it). Run the caller in a subshell of its own when other
# jobs of the shell must not count or be waited for.
in_parallel() {
	local failed=$1; shift
	while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
	{ "$@" || echo "$*" >>"$failed"; } &
}

# step NAME CMD...: run CMD, printing when it starts and how long it took.
# On failure it says which step failed and returns the command's status.
step() {
	local name=$1; shift
	local s; s=$(date +%s)
	log "==> $name"
	if "$@"; then
		log "<== $name done in $(( $(date +%s) - s ))s"
	else
		local rc=$?
		log "!!! $name FAILED after $(( $(date +%s) - s ))s (exit $rc)"
		return "$rc"
	fi
}

# run_logged LOGFILE CMD...: run CMD with its output in LOGFILE, print a
# heartbeat every 30s so a long build is never silent, show the log tail on
# failure.
run_logged() {
	local logfile=$1; shift
	mkdir -p "$(dirname "$logfile")"
	"$@" >"$logfile" 2>&1 &
	local pid=$! s; s=$(date +%s)
	while kill -0 "$pid" 2>/dev/null; do
		local i
		for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
		kill -0 "$pid" 2>/dev/null && log "    ... still running ($(( $(date +%s) - s ))s): $(tail -n1 "$logfile" 2>/dev/null | cut -c1-120)"
	done
	# Not `if wait; then ...; fi; rc=$?`: after an if without else, $? is 0.
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" != 0 ] || return 0
	log "command failed (exit $rc): $*"
	log "last lines of $logfile:"
	tail -n 25 "$logfile" >&2
	return "$rc"
}

# hash_inputs FILE|DIR...: a short stable hash of the contents of the given
# files (directories are walked, sorted) plus the Go version. Paths count
# relative to the checkout or the module cache, so the same files hash the
# same wherever GOMODCACHE is (bench/kind-up.sh --cold --keep hands its
# outputs to the normal cache).
hash_inputs() {
	local modcache; modcache=$(go env GOMODCACHE)
	{
		go version
		local p
		for p in "$@"; do
			if [ -d "$p" ]; then
				find "$p" -type f ! -path '*/_out/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
			else
				sha256sum "$p"
			fi
		done | sed -e "s#$FENCECHECK_ROOT/##" -e "s#$modcache/##"
	} | sha256sum | cut -c1-12
}

# with_lock FILE CMD...: serialize CMD with other runs holding FILE.
# Callers may already hold the same lock (a with_lock holder's child, or
# `flock kind.lock make kind-up images`);
# taking it again on a new descriptor would deadlock, so CMD then runs
# under the holder's lock. A with_lock holder marks its children through
# FENCECHECK_HELD_LOCKS; /proc/locks finds a flock(1) ancestor (a lock
# taken by the flock command inside a script names that command's pid,
# gone by now, hence the mark).
with_lock() {
	local f=$1; shift
	mkdir -p "$(dirname "$f")"; touch "$f"
	f=$(realpath "$f")
	if [[ ":${FENCECHECK_HELD_LOCKS:-}:" == *":$f:"* ]]; then
		log "lock $f is held by a parent process: running under it"
		"$@"
		return
	fi
	exec {_fc_lockfd}>>"$f"
	if ! flock -n "$_fc_lockfd"; then
		if _lock_held_by_ancestor "$f"; then
			log "lock $f is held by a parent process: running under it"
		else
			log "waiting for lock $f (another run is in progress)"
			flock "$_fc_lockfd"
		fi
	fi
	FENCECHECK_HELD_LOCKS="${FENCECHECK_HELD_LOCKS:-}:$f" "$@"
}

_lock_held_by_ancestor() {
	local ino holders pid
	ino=$(stat -c %i "$1")
	holders=$(awk -v ino="$ino" '$2=="FLOCK" { split($6, a, ":"); if (a[3]==ino) print $5 }' /proc/locks)
	[ -n "$holders" ] || return 1
	pid=$$
	while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
		for h in $holders; do [ "$h" = "$pid" ] && return 0; done
		pid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
	done
	return 1
}

# hash_str ARG...: like hash_inputs, but an argument that is not an existing
# path is hashed as a string (versions, function bodies from `declare -f`).
hash_str() {
	local a
	for a in "$@"; do
		if [ -e "$a" ]; then hash_inputs "$a"; else printf '%s' "$a" | sha256sum; fi
	done | sha256sum | cut -c1-12
}

# module_copy MODULE VERSION DEST: a writable copy of MODULE@VERSION's
# source at DEST (the module cache's copy is read-only), for builds that
# must change or add a file in it.
module_copy() {
	local src
	src=$(cd "$FENCECHECK_ROOT" && go mod download -json "$1@$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || die "cannot download $1@$2"
	cp -r "$src" "$3" && chmod -R u+w "$3"
}

# now; secs A B: the bench scripts' clock: the time in seconds, and B - A
# to a tenth of a second.
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }

# gotestsum_bin: the path of gotestsum at the version tools/go.mod pins,
# built once into the cache; fails (printing nothing) if it cannot be built.
gotestsum_bin() {
	local bin
	bin="$FENCECHECK_CACHE/bin/gotestsum-$(hash_inputs "$FENCECHECK_ROOT/tools/go.mod" "$FENCECHECK_ROOT/tools/go.sum")"
	[ -x "$bin" ] || (cd "$FENCECHECK_ROOT/tools" && go build -o "$bin" gotest.tools/gotestsum) >/dev/null 2>&1 || return 1
	printf '%s' "$bin"
}

# unexpected_results RECHECK: the results of `fencecheck check` output
# (recheck.txt) that were not as expected, with their evidence, at most 40
# lines of at most 400 characters: what a CI log's tail must show when a
# run is red.
unexpected_results() {
	[ -s "$1" ] || return 0
	# One awk, no head: under pipefail a head that stops reading would fail
	# the pipeline, and with it a caller's exit trap.
	awk '/^FAIL / { show = 1 } /^FAIL / || (show && /^       /) { if (++n <= 40) print substr($0, 1, 400); next } { show = 0 }' "$1"
}

# integration_run DIR...: a go test -run pattern for exactly the tests in
# DIR's integration-tagged test files. `go test -tags integration` builds
# a package's untagged tests too, and `make unit` has already run those:
# run twice, certify's alone cost 150 s.
integration_run() {
	local files names
	files=$(find "$@" -name '*_test.go' -exec grep -l '^//go:build.*\bintegration\b' {} +)
	[ -n "$files" ] || die "integration_run: no integration-tagged test file under $*"
	# shellcheck disable=SC2086 # file paths from this checkout: no spaces
	names=$(grep -ho '^func Test[A-Za-z0-9_]*(t \*testing\.T)' $files | sed 's/^func \(Test[A-Za-z0-9_]*\).*/\1/' | sort -u | paste -sd'|')
	[ -n "$names" ] || die "integration_run: no test function in $files"
	printf '^(%s)$' "$names"
}
