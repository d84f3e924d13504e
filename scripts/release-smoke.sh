#!/usr/bin/env bash
# Smoke test of a release tarball (CI runs it after `npm run release`, .ci/run): unpacks it
# under a fresh directory away from the checkout, as root's read-only installation, and runs it
# as a user who is not root (the user starling-smoke, created when missing, when this runs as
# root; else the current user) with its etc, data and log directories outside the installation
# (as etc/systemd/starling.service does) and a PATH whose `node`, if any, is the machine's own:
# `bin/starling start` must bring the node up on the installation's Node.js, `ping` answer
# pong, `bin/starling-ctl status` find it, and `bin/starling stop` stop it. Listeners on
# ephemeral loopback ports. Usage: scripts/release-smoke.sh dist/release/starling-*.tar.gz
set -euo pipefail
tarball=$(readlink -f "$1")
work=$(mktemp -d /tmp/starling-release-XXXXXX)
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
install=$(echo "$work"/starling-*)
as=()
if [ "$(id -u)" = 0 ]; then
  id starling-smoke >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin starling-smoke
  chown -R root:root "$install"
  mkdir -p "$work/var"
  chown starling-smoke "$work/var"
  as=(runuser -u starling-smoke --)
else
  mkdir -p "$work/var"
fi
env=(env -i HOME=/nonexistent PATH=/usr/local/bin:/usr/bin:/bin
  STARLING_ETC_DIR="$work/var/etc" STARLING_NODE__DATA_DIR="$work/var/data" STARLING_LOG__DIR="$work/var/log"
  STARLING_LISTENER__TCP__EXTERNAL=127.0.0.1:0 STARLING_LISTENER__SSL__EXTERNAL=127.0.0.1:0
  STARLING_LISTENER__WS__EXTERNAL=127.0.0.1:0 STARLING_LISTENER__WSS__EXTERNAL=127.0.0.1:0
  STARLING_MANAGEMENT__LISTENER__HTTP=127.0.0.1:0 STARLING_DASHBOARD__LISTENER__HTTP=127.0.0.1:0
  STARLING_CLUSTER__LISTEN=127.0.0.1:0)
run () { (cd "$work" && "${as[@]}" "${env[@]}" "$@"); }
stop_node () { run "$install/bin/starling" stop >/dev/null 2>&1 || true; }
trap 'stop_node; rm -rf "$work"' EXIT

run "$install/bin/starling" start
pid=$(cat "$work/var/data/starling.pid")
user=$(stat -c %U "/proc/$pid")
exe=$(readlink -f "/proc/$pid/exe")
echo "release node: pid $pid, user $user, runtime $exe ($("$exe" --version))"
[ "$user" != root ] || { echo 'release smoke: the node runs as root' >&2; exit 1; }
[ "$exe" = "$install/node_modules/node/bin/node" ] || { echo "release smoke: the node runs on $exe, not the installation's runtime" >&2; exit 1; }
[ "$(run "$install/bin/starling" ping)" = pong ]
run "$install/bin/starling-ctl" status
grep -q 'Start mqtt:tcp listener on 127.0.0.1:' "$work/var/log/console.log"
run "$install/bin/starling" stop
# gone, or a zombie waiting for a parent that does not reap (a container's pid 1): exited either way
state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1 || true)
if [ -n "$state" ] && [ "$state" != Z ]; then echo "release smoke: pid $pid still runs after stop (state $state)" >&2; exit 1; fi
echo "release smoke: ok ($(basename "$tarball"))"
