#!/usr/bin/env bash
# Makes what deploy/cluster/compose.yaml needs to run, for a test or an evaluation: a private CA, a
# certificate for the three NATS servers (TLS for clients and routes), a client certificate for
# Hookline (mutual TLS), the NATS password of Hookline's user, the admin key and, in secrets/.env,
# the variables compose reads. In production use your own PKI and secret store instead.
#
#   deploy/cluster/make-secrets.sh [dir]     dir defaults to deploy/cluster/secrets
#
# Nothing is overwritten: delete the folder to make new ones. The names the certificates are valid
# for are nats-1, nats-2, nats-3 (the compose services), localhost and 127.0.0.1 (host networking);
# add more with NATS_EXTRA_SANS="DNS:nats.example.com,IP:10.0.0.5". Needs openssl.
set -euo pipefail

dir="${1:-$(cd "$(dirname "$0")" && pwd)/secrets}"
if [ -e "$dir/.env" ]; then
  echo "$0: $dir already holds secrets; delete it to make new ones" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
days=825
sans="DNS:nats-1,DNS:nats-2,DNS:nats-3,DNS:localhost,IP:127.0.0.1${NATS_EXTRA_SANS:+,$NATS_EXTRA_SANS}"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -keyout ca-key.pem -out ca.pem -subj "/CN=Hookline test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null

issue() { # name, subject CN, extended key usage, subjectAltName (or empty)
  local name="$1" cn="$2" eku="$3" san="$4" ext
  ext="$(mktemp)"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } >"$ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$name-key.pem" \
    -out "$name.csr" -subj "/CN=$cn" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days "$days" \
    -extfile "$ext" -out "$name.pem" 2>/dev/null
  rm -f "$name.csr" "$ext"
}
# The servers present theirs to clients and to each other (routes), hence both usages.
issue nats-server nats serverAuth,clientAuth "$sans"
issue hookline-client hookline clientAuth ""
rm -f ca.srl

# Letters first: nats.conf reads $HOOKLINE_NATS_PASSWORD as a config value, and one starting with
# digits can parse as a number (5e3… as an exponent, all digits as an integer) and stop the servers.
password="hl$(openssl rand -hex 24)"
admin_key="$(openssl rand -hex 24)"
cat >.env <<ENV
# Made by make-secrets.sh; read by deploy/cluster/compose.yaml (docker compose --env-file).
HOOKLINE_NATS_PASSWORD=$password
HOOKLINE_ADMIN_KEY=$admin_key
ENV

# The containers run as other users than the one running this script (Hookline as uid 10001, NATS
# as root): the certificates' keys must be readable by them. The CA's key is used by nothing in the
# stack; it stays readable by its owner only.
chmod 0644 ./*.pem
chmod 0600 ca-key.pem .env
echo "$0: made the CA, nats-server and hookline-client certificates and .env in $dir" >&2
