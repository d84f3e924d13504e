#!/usr/bin/env bash
## Creates development TLS files for Starling. NOT for production.
##
##   make-dev-certs.sh [--force] [DIR]
##
## In DIR (default: this script's directory) it writes:
##   cacert.pem, cakey.pem           a development CA
##   key.pem, cert.pem               server key and certificate for CN=localhost,
##                                   subjectAltName DNS:localhost, IP:127.0.0.1
##   client-key.pem, client-cert.pem a client key and certificate for mutual-TLS tests
## All certificates are signed by the CA and valid 825 days (the longest lifetime
## macOS and iOS accept for a TLS server certificate). Keys are RSA 2048, mode 600.
##
## Idempotent: when DIR/cert.pem exists it does nothing, unless --force is given.
## Needs openssl 1.1.1 or later.
set -euo pipefail

DAYS=825
force=0
dir=""

usage () {
  sed -n 's/^## \{0,1\}//p' "$0" | sed -n '1,15p'
}

while [ $# -gt 0 ]; do
  case "$1" in
    --force|-f) force=1 ;;
    --help|-h) usage; exit 0 ;;
    -*) echo "make-dev-certs.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *)
      if [ -n "$dir" ]; then echo "make-dev-certs.sh: only one directory, please" >&2; exit 2; fi
      dir="$1" ;;
  esac
  shift
done

if [ -z "$dir" ]; then
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fi

if [ -f "$dir/cert.pem" ] && [ "$force" -eq 0 ]; then
  echo "make-dev-certs.sh: $dir/cert.pem exists; nothing to do (use --force to replace it)"
  exit 0
fi

command -v openssl >/dev/null 2>&1 || { echo "make-dev-certs.sh: openssl not found on PATH" >&2; exit 1; }
mkdir -p "$dir"

# Build everything in a scratch directory, then move it into place, so an interrupted run
# never leaves a key that does not match its certificate.
work="$(mktemp -d "${TMPDIR:-/tmp}/starling-certs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
umask 077

run () {
  # openssl is chatty on stderr; show its output only when it fails
  if ! "$@" >"$work/openssl.log" 2>&1; then
    echo "make-dev-certs.sh: failed: $*" >&2
    cat "$work/openssl.log" >&2
    exit 1
  fi
}

serial () {
  echo "0x$(openssl rand -hex 16)"
}

# --- development CA
run openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days "$DAYS" \
  -keyout "$work/cakey.pem" -out "$work/cacert.pem" \
  -subj "/O=Starling/CN=Starling Development CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -addext "subjectKeyIdentifier=hash"

# sign NAME CN EXTENSIONS: NAME-key.pem + NAME.csr -> NAME-cert.pem signed by the CA
sign () {
  local name="$1" cn="$2" ext="$3"
  printf '%s\n' "$ext" > "$work/$name.ext"
  run openssl req -new -newkey rsa:2048 -nodes -sha256 \
    -keyout "$work/$name-key.pem" -out "$work/$name.csr" -subj "/O=Starling/CN=$cn"
  run openssl x509 -req -sha256 -days "$DAYS" -in "$work/$name.csr" \
    -CA "$work/cacert.pem" -CAkey "$work/cakey.pem" -set_serial "$(serial)" \
    -extfile "$work/$name.ext" -out "$work/$name-cert.pem"
}

sign server localhost "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1
authorityKeyIdentifier=keyid"

sign client starling-client "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
authorityKeyIdentifier=keyid"

run openssl verify -CAfile "$work/cacert.pem" "$work/server-cert.pem" "$work/client-cert.pem"

chmod 600 "$work"/*-key.pem "$work/cakey.pem"
chmod 644 "$work/cacert.pem" "$work/server-cert.pem" "$work/client-cert.pem"
mv -f "$work/cacert.pem" "$dir/cacert.pem"
mv -f "$work/cakey.pem" "$dir/cakey.pem"
mv -f "$work/client-key.pem" "$dir/client-key.pem"
mv -f "$work/client-cert.pem" "$dir/client-cert.pem"
mv -f "$work/server-key.pem" "$dir/key.pem"
# cert.pem last: its presence is what marks the set as complete
mv -f "$work/server-cert.pem" "$dir/cert.pem"

echo "make-dev-certs.sh: wrote development CA, server and client certificates to $dir"
