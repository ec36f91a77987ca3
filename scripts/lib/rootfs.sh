# shellcheck shell=bash
# debian_rootfs DIR PKGS NAME: a Debian root filesystem in DIR (which must
# not exist): the minbase variant plus PKGS (comma-separated), from
# $DEBIAN_MIRROR, logged to $FENCECHECK_CACHE/logs/mmdebstrap-NAME.log, with
# apt's package lists and cache already removed (mmdebstrap's own cleanup).
# mmdebstrap, not debootstrap: apt resolves and dpkg installs the packages
# in one pass, about half debootstrap's CPU for the node's 154 packages
# (docs/kind.md), and that CPU runs beside the node's go build. The
# merged-usr hook sets up /usr as debootstrap does (usr-is-merged, not the
# usrmerge package, which would bring perl into the node), so the same
# packages are installed. Requires common.sh and docker.sh (apt_install).

DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

debian_rootfs() {
	local dir=$1 pkgs=$2 name=$3 log="$FENCECHECK_CACHE/logs/mmdebstrap-$3.log"
	apt_install mmdebstrap
	run_logged "$log" mmdebstrap --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		--include="$pkgs" "$DEBIAN_SUITE" "$dir" "$DEBIAN_MIRROR" ||
		die "mmdebstrap $name failed: see $log (needs the Debian mirror $DEBIAN_MIRROR)"
}

# debian_rootfs_tar OUT.tar PKGS NAME [CUSTOMIZE_FN]: the same as a tar with
# numeric owners, CUSTOMIZE_FN DIR run on it first; built in OUT.tar.d.
debian_rootfs_tar() {
	local out=$1 pkgs=$2 name=$3 fn=${4:-} dir="$1.d"
	rm -rf "$dir"
	debian_rootfs "$dir" "$pkgs" "$name"
	[ -z "$fn" ] || "$fn" "$dir"
	tar --numeric-owner -C "$dir" -cf "$out.tmp" . && mv "$out.tmp" "$out"
	rm -rf "$dir"
}
