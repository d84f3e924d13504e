# Sourced by the launchers (bin/starling, bin/starling-ctl, bin/starling-codec) when a shell runs
# them: chooses the Node.js that runs Starling and replaces the shell with it (no extra process).
# The installation's own runtime comes first: node_modules/node/bin/node, the Node.js 24 that
# `npm install` brings (the registry's `node` package) and that a release tarball carries. Without
# it, the `node` on PATH (bin/node-version.js checks that it is new enough). To run Starling on
# another Node.js, give the launcher to it: `/opt/node-25/bin/node bin/starling`.
self=$(readlink -f -- "$0" 2>/dev/null) || self=$0
root=$(dirname -- "$(dirname -- "$self")")
if [ -x "$root/node_modules/node/bin/node" ]; then
  exec "$root/node_modules/node/bin/node" "$self" "$@"
fi
exec node "$self" "$@"
