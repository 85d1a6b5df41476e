#!/usr/bin/env bash
# Checks that src/ reads in pipeline order: a file in one stage folder includes headers of its
# own stage or of earlier ones, never of a later one (DESIGN.md, "Layout"). Parses every
# `#include "stage/file"` line of src/*/*.{c,h,inc}, prints the include graph (folder -> folders
# it includes) and one line per violation; exits 1 when there is one.
# Includes without a stage folder ("smelt.h", the Makefile's generated "mathf_src.h") are not
# stage edges. Since every edge goes to the same or an earlier stage, files of different folders
# cannot include each other in a cycle.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

stages=(core ir onnx graph fuse place kir lower ops target plan rt api)
declare -A rank
for i in "${!stages[@]}"; do rank[${stages[$i]}]=$i; done

bad=0
declare -A edges
for f in src/*/*.c src/*/*.h src/*/*.inc; do
    [ -e "$f" ] || continue
    from="${f#src/}"; from="${from%%/*}"
    if [ -z "${rank[$from]+x}" ]; then
        echo "check-layout: $f: folder src/$from/ is not a stage (${stages[*]})"
        bad=1
        continue
    fi
    while IFS=: read -r line inc; do
        to="${inc%%/*}"
        [ "$to" = "$inc" ] && continue # no folder: not a stage edge
        if [ -z "${rank[$to]+x}" ]; then
            echo "check-layout: $f:$line includes \"$inc\": src/$to/ is not a stage"
            bad=1
            continue
        fi
        [ "$to" != "$from" ] && edges[$from]+=" $to"
        if [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
            echo "check-layout: $f:$line includes \"$inc\": $from/ comes before $to/ in the pipeline"
            bad=1
        fi
    done < <(awk 'match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"]*"/) {
                      s = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", s); sub(/"$/, "", s)
                      print FNR ":" s }' "$f")
done

echo "include graph (folder -> folders it includes):"
for s in "${stages[@]}"; do
    deps="$(printf '%s\n' ${edges[$s]:-} | sed '/^$/d' | sort -u | tr '\n' ' ')"
    printf '  %-7s -> %s\n' "$s" "${deps:-(none)}"
done
if [ "$bad" -eq 0 ]; then echo "check-layout: ok"; else echo "check-layout: FAILED"; fi
exit "$bad"
