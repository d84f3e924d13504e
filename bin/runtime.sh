# Sourced by the launchers (bin/starling, bin/starling-ctl, bin/starling-codec) when a shell runs
# them: chooses the Node.js that runs Starling and replaces the shell with it (no extra process).
# The installation's own runtime comes first: node_modules/node/bin/node, the Node.js 24 that
# `npm install` brings (the registry's `node` package) and that a release tarball carries. Without
# it, the `node` on PATH (bin/node-version.js checks that it is new enough). To run Starling on
# another Node.js, give the launcher to it: `/opt/node-25/bin/node bin/starling`.
#
# Memory under a flood (docs/performance.md "Memory under a flood"): V8's young generation is
# capped at two 16 MiB semi-spaces (Node.js 24 lets them grow to 64 MiB each under a high
# allocation rate, 128 MiB of RSS; 8 MiB cost CPU per message), and glibc serves allocations
# of 64 KiB and more (the sockets' read buffers) with mmap, so that their memory goes back to
# the system when freed instead of staying in the heap's free lists. Both are measured there
# against the CPU per message. MALLOC_MMAP_THRESHOLD_ set in the environment is kept; for
# other V8 flags, give the launcher to Node.js yourself (`node --max-semi-space-size=32
# bin/starling`: run so, neither setting applies).
self=$(readlink -f -- "$0" 2>/dev/null) || self=$0
root=$(dirname -- "$(dirname -- "$self")")
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-65536}"
if [ -x "$root/node_modules/node/bin/node" ]; then
  exec "$root/node_modules/node/bin/node" --max-semi-space-size=16 "$self" "$@"
fi
exec node --max-semi-space-size=16 "$self" "$@"
