#!/usr/bin/env bash
# image.sh --imgbuild BIN --out FILE [--tag REF]: build the nodecontroller
# image (no docker, no registry) with cmd/imgbuild from files on this machine:
# the Node runtime ($NODE_BIN, default `command -v node`) and every shared
# library `ldd` lists for it (with the dynamic loader), /etc/passwd and
# /etc/group naming the non-root user 65532, and the JS sources under /app.
# The image runs `/usr/bin/node /app/src/main.js` as 65532:65532.
# scripts/images.sh calls it for ./examples/nodecontroller.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
IMGBUILD="" OUT="" TAG="docker.io/fencecheck/nodecontroller:dev"
while [ $# -gt 0 ]; do
	case "$1" in
	--imgbuild) IMGBUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--tag) TAG=$2; shift 2 ;;
	-h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "image.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$IMGBUILD" ] && [ -n "$OUT" ] || { echo "usage: image.sh --imgbuild BIN --out FILE [--tag REF]" >&2; exit 2; }
NODE_BIN=${NODE_BIN:-$(command -v node || true)}
[ -x "$NODE_BIN" ] || { echo "image.sh: no node binary (install Node.js 20 or set NODE_BIN)" >&2; exit 1; }
NODE_BIN=$(readlink -f "$NODE_BIN")
"$NODE_BIN" -e 'const m = +process.versions.node.split(".")[0]; if (m < 18) { console.error(`node ${process.version}: need 18 or later`); process.exit(1); }'

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
adds=(--add "$NODE_BIN:/usr/bin/node:0755")
# Shared libraries, at the paths ldd resolves them to (symlinks followed:
# the file's content goes in under the name the loader looks for).
while read -r lib; do
	[ -n "$lib" ] || continue
	adds+=(--add "$(readlink -f "$lib"):$lib:0755")
done < <(ldd "$NODE_BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$STAGE/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$STAGE/group"
printf 'hosts: files dns\n' >"$STAGE/nsswitch.conf"
adds+=(--add "$STAGE/passwd:/etc/passwd:0644" --add "$STAGE/group:/etc/group:0644" --add "$STAGE/nsswitch.conf:/etc/nsswitch.conf:0644")
for f in "$HERE"/src/*.js; do
	adds+=(--add "$f:/app/src/$(basename "$f"):0644")
done
"$IMGBUILD" image --tag "$TAG" --out "$OUT" "${adds[@]}" \
	--entrypoint /usr/bin/node,/app/src/main.js --user 65532:65532 --workdir /app \
	--env NODE_ENV=production
