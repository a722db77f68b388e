#!/bin/sh
# Build the MPI peer programs of weft-bench into target/peers/ (weft-bench --peers does this on
# demand too). Usage: scripts/build-peers.sh [TARGET_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${CARGO_TARGET_DIR:-$root/target}}/peers
src=$root/benches/peers/osu_p2p.c
mkdir -p "$out"
status=0
for impl in openmpi mpich; do
    cc=mpicc.$impl
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "peer $impl unavailable: $cc not found" >&2
        continue
    fi
    "$cc" -O2 -o "$out/osu_p2p.$impl" "$src" && echo "built $out/osu_p2p.$impl" || status=1
done
exit $status
