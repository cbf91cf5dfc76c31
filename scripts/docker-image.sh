#!/usr/bin/env bash
# Builds Hookline's image from the Dockerfile with BuildKit, passing the host's CA bundle to npm as a
# build secret (mounted for `npm ci` only, stored in no layer). Plain `docker build` does the same
# wherever buildx is installed; this script also works with a Docker CLI older than 23 that has no
# buildx (Debian bookworm's docker.io), whose `DOCKER_BUILDKIT=1 docker build` uses the daemon's own
# BuildKit.
#
#   scripts/docker-image.sh [-t TAG] [--base BASE_IMAGE] [--context DIR] [extra docker build args…]
#
# TAG defaults to hookline:local; without --base the Dockerfile's default (official node:24 slim)
# is used. The CA bundle is HOOKLINE_NPM_CA (default /etc/ssl/certs/ca-certificates.crt), passed
# when that file exists. The build runs under nice, so it leaves the machine usable.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tag=hookline:local
base=
context="$root"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t) tag="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --context) context="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done

# A Docker CLI that builds with BuildKit: one with buildx, or one older than 23 (built-in BuildKit).
docker_cli=
for candidate in $(type -ap docker); do
  if "$candidate" buildx version >/dev/null 2>&1; then docker_cli="$candidate"; break; fi
  client_major="$("$candidate" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1 || true)"
  if [ -n "$client_major" ] && [ "$client_major" -lt 23 ] 2>/dev/null; then docker_cli="$candidate"; break; fi
done
if [ -z "$docker_cli" ]; then
  echo "$0: no Docker CLI here builds with BuildKit: install buildx (docker-buildx-plugin) or Debian's docker.io" >&2
  exit 1
fi

args=(build -t "$tag" -f "$root/Dockerfile")
[ -n "$base" ] && args+=(--build-arg "BASE_IMAGE=$base")
ca="${HOOKLINE_NPM_CA:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$ca" ] && args+=(--secret "id=npm_ca,src=$ca")
DOCKER_BUILDKIT=1 nice -n 10 "$docker_cli" "${args[@]}" "${extra[@]}" "$context"
