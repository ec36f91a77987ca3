#!/usr/bin/env bash
# Host-level proof of the chaos executor's rule logic: network namespaces
# joined by veth pairs, real TCP traffic, routes installed with netlink.
# Needs root; installs iproute2 if missing. The tests delete their
# namespaces even when they fail.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "test-integration-chaos: needs root (network namespaces)" >&2
	exit 1
fi
if ! command -v ip >/dev/null; then
	echo "test-integration-chaos: installing iproute2"
	apt-get install -y iproute2 >/dev/null
fi
exec go test -tags integration -count=1 -v ./chaos/...
