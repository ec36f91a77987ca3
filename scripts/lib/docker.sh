# shellcheck shell=bash
# ensure_docker: make `docker info` work, installing and starting dockerd on
# Debian as root, with the runc wrapper as default runtime (needed where the
# capability bounding set lacks CAP_SYS_RESOURCE; a no-op elsewhere).
# Requires common.sh.

RUNC_WRAPPER=/usr/local/lib/fencecheck/runc-wrapper
DOCKERD_STARTED_AT=0
DOCKER_LOG="$FENCECHECK_CACHE/logs/dockerd.log"

_apt_updated=""
# apt_install PKG...: install the Debian packages that are missing, quietly.
apt_install() {
	local missing=() p
	for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	is_debian_root || die "missing packages: ${missing[*]}; install them (this script installs them itself only on Debian as root)"
	if [ -z "$_apt_updated" ]; then
		log "apt-get update"
		mkdir -p "$FENCECHECK_CACHE/logs"; apt-get update -qq >>"$FENCECHECK_CACHE/logs/apt.log" 2>&1 || die "apt-get update failed"
		_apt_updated=1
	fi
	log "installing with apt: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$FENCECHECK_CACHE/logs/apt.log" 2>&1 ||
		die "apt-get install ${missing[*]} failed"
}

is_debian_root() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null; }

# install_runc_wrapper: build the wrapper into a permanent place when its
# source changed.
install_runc_wrapper() {
	local src="$FENCECHECK_ROOT/scripts/nodeimage" h
	h=$(hash_inputs "$src/go.mod" "$src/cmd/runc-wrapper")
	if [ -x "$RUNC_WRAPPER" ] && [ "$(cat "$RUNC_WRAPPER.hash" 2>/dev/null)" = "$h" ]; then return 0; fi
	log "building runc wrapper into $RUNC_WRAPPER"
	mkdir -p "$(dirname "$RUNC_WRAPPER")"
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$RUNC_WRAPPER.new" ./cmd/runc-wrapper) || die "building runc wrapper failed"
	mv "$RUNC_WRAPPER.new" "$RUNC_WRAPPER"
	echo "$h" >"$RUNC_WRAPPER.hash"
}

# configure_daemon_json: register the wrapper as default runtime, keeping
# any other settings already in /etc/docker/daemon.json.
configure_daemon_json() {
	local f=/etc/docker/daemon.json cur='{}'
	mkdir -p /etc/docker
	[ -s "$f" ] && cur=$(cat "$f")
	local want
	want=$(jq --arg p "$RUNC_WRAPPER" '.runtimes["fencecheck-runc"] = {path: $p} | ."default-runtime" = "fencecheck-runc"' <<<"$cur") ||
		die "$f is not valid JSON; fix or remove it"
	if [ "$(jq -S . <<<"$cur")" != "$(jq -S . <<<"$want")" ]; then
		log "writing $f (default-runtime fencecheck-runc -> $RUNC_WRAPPER)"
		printf '%s\n' "$want" >"$f"
		return 1 # changed
	fi
	return 0
}

# close_inherited_fds: close every descriptor above 2 of this (sub)shell.
close_inherited_fds() {
	local fd
	for fd in /proc/$BASHPID/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
	done
	return 0
}

wait_docker() {
	local deadline=$(( $(date +%s) + ${1:-90} ))
	until docker info >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 1
	done
}

ensure_docker() {
	if docker info >/dev/null 2>&1; then
		local rt
		rt=$(docker info --format '{{.DefaultRuntime}}' 2>/dev/null || true)
		if [ "$rt" != fencecheck-runc ] && grep -q '^CapBnd:.*' /proc/self/status &&
			[ "$(awk '/^CapBnd:/{print $2}' /proc/self/status)" != 000001ffffffffff ]; then
			log "WARNING: dockerd runs with default runtime '$rt' and this host's capability bounding set is reduced;"
			log "         'docker run --privileged' may fail. Restart dockerd with /etc/docker/daemon.json from scripts/lib/docker.sh."
		fi
		return 0
	fi
	is_debian_root || die "docker is not running and this is not Debian as root: install and start Docker (docker.io or Docker CE), then retry"
	command -v dockerd >/dev/null || apt_install docker.io
	apt_install jq runc
	install_runc_wrapper
	configure_daemon_json || true
	mkdir -p /lib/modules # kind bind-mounts it; this VM has no modules dir
	if pgrep -x dockerd >/dev/null; then
		# Starting or shutting down: wait for it to answer or to be gone.
		log "dockerd is running but not answering; waiting for it to answer or exit"
		local deadline=$(( $(date +%s) + 60 ))
		while pgrep -x dockerd >/dev/null && ! docker info >/dev/null 2>&1 && [ "$(date +%s)" -lt "$deadline" ]; do sleep 1; done
	fi
	if ! pgrep -x dockerd >/dev/null; then
		mkdir -p "$(dirname "$DOCKER_LOG")"
		rm -f /var/run/docker.pid
		log "starting dockerd (log: $DOCKER_LOG)"
		DOCKERD_STARTED_AT=$(date +%s) # containers it brings back may carry stale state
		# dockerd (and containerd after it) outlive this script: they must not
		# inherit any descriptor above 2, or a lock a caller holds (kind.lock,
		# or a flock the user wrapped around this script) stays held for as
		# long as they run.
		(close_inherited_fds; exec setsid nohup dockerd >>"$DOCKER_LOG" 2>&1 </dev/null) &
	fi
	wait_docker 90 || { tail -n 20 "$DOCKER_LOG" >&2; die "dockerd did not come up within 90s; see $DOCKER_LOG"; }
	log "dockerd is up (default runtime: $(docker info --format '{{.DefaultRuntime}}'))"
}
