#!/bin/sh
# The `fuserule apply` benchmark (bench/README.md, "fuserule apply"): end-to-end time and peak
# memory of apply (parse, match, rewrite, print) on generated graphs of 100k and 1M nodes, with 10,
# 100 and 1,000 rules; and of `fuserule fmt` (parse, validate, print: the part apply shares with
# every command) on the same graphs.
#
#     bench/apply/run.sh [BUILD_DIR] [SIZES...]      (defaults: build, 100000 1000000)
#
# Prints one line per run: graph nodes, rules, wall seconds, CPU seconds (user + system), nodes per
# CPU second, peak RSS in MiB and in bytes per node.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
sizes=${*:-100000 1000000}
fuserule=$build/cli/fuserule
[ -x "$fuserule" ] || { echo "run.sh: no $fuserule (build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for n in 10 100 1000; do
    python3 "$here/gen.py" rules "$n" "$tmp/r$n.rules"
done

measure() { # label nodes command...
    label=$1; nodes=$2; shift 2
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" > /dev/null 2> "$tmp/stderr" || {
        cat "$tmp/stderr" >&2; exit 1; }
    read -r wall user sys kb < "$tmp/time"
    awk -v l="$label" -v n="$nodes" -v w="$wall" -v u="$user" -v s="$sys" -v kb="$kb" 'BEGIN {
        cpu = u + s; if (cpu <= 0) cpu = 0.01
        printf "%-22s %8d nodes  wall %6.2f s  cpu %6.2f s  %9.0f nodes/s  peak %6.0f MiB  %5.0f B/node\n",
               l, n, w, cpu, n / cpu, kb / 1024, kb * 1024 / n }'
}

for size in $sizes; do
    python3 "$here/gen.py" graph "$size" "$tmp/g.graph"
    nodes=$(grep -c ' = [A-Z]' "$tmp/g.graph")
    measure "fmt (baseline)" "$nodes" "$fuserule" fmt "$tmp/g.graph"
    for n in 10 100 1000; do
        measure "apply, $n rules" "$nodes" "$fuserule" apply -r "$tmp/r$n.rules" "$tmp/g.graph"
    done
done
