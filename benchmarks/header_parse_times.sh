#!/usr/bin/env bash
# Parse time of each policy family's public headers: `g++ -std=c++20 -fsyntax-only` of a file that
# includes every public header of the family (include/gpusched/FAMILY/*.hpp, not detail/), median of
# 3 runs, CPU seconds of the compiler (user + system: on a machine shared with other builds wall time
# varies with the load, CPU time much less). Shows what a consumer pays for including a family and that each family pulls
# only its own dependency (fairness: Eigen; topology and gang: Boost.Graph's headers).
#
#   benchmarks/header_parse_times.sh [RUNS]     (from anywhere; CXX overrides g++)
# Results go in benchmarks/README.md, section "Header parse times".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
cxx=${CXX:-g++}
eigen=$(pkg-config --cflags-only-I eigen3 2>/dev/null || echo -I/usr/include/eigen3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

measure() {  # measure NAME FILE...: prints "| NAME | headers | median s |"
  local name=$1; shift
  local tu=$tmp/$name.cpp
  : > "$tu"
  for h in "$@"; do echo "#include \"${h#"$root"/include/}\"" >> "$tu"; done
  local times=()
  for ((i = 0; i < runs; ++i)); do
    local cpu
    cpu=$( { TIMEFORMAT='%U %S'; time "$cxx" -std=c++20 -fsyntax-only -DFMT_HEADER_ONLY=1 \
             -I"$root/include" $eigen "$tu" >/dev/null; } 2>&1 | tail -1)
    times+=("$(echo "$cpu" | awk '{print $1 + $2}')")
  done
  printf '| %s | %d | %.2f |\n' "$name" "$#" "$(printf '%s\n' "${times[@]}" | median)"
}

echo "| family | public headers | parse time, CPU s (median of $runs) |"
echo "|---|---|---|"
for family in core cluster packing mig topology gang fairness scheduler io sim; do
  mapfile -t headers < <(ls "$root"/include/gpusched/$family/*.hpp)
  measure "$family" "${headers[@]}"
done
measure gpusched.hpp "$root/include/gpusched/gpusched.hpp"
