#!/usr/bin/env bash
# Size limits: no function longer than 80 lines and no file longer than 600 lines in the product's
# C++ (common/, sender/, receiver/, iotest/, linksim/) and in the Python and shell scripts under
# scripts/ (tests are not held to it). Lists every offender and exits 1 if any is not on the
# allow-list below, 0 otherwise. How each kind of function is measured: scripts/check_sizes.py.
# tests/scripts/sizes_test.sh proves on planted files that each kind of offender fails the check.
#
# Usage: scripts/check_sizes.sh [SOURCE_ROOT]     (default: the repository holding this script)
#        scripts/check_sizes.sh --cross-check BUILD_DIR [LIMIT]
#   The second form checks the C++ measurement itself: clang-tidy-14's readability-function-size
#   at LineThreshold LIMIT (default 80) over the product's translation units in
#   BUILD_DIR/compile_commands.json, compared function by function with this script's figures at
#   the same limit; exits 1 on any difference. BUILD_DIR is configured without unity build, and
#   need not be built (cmake -S . -B /tmp/ddft-tidy -DCMAKE_UNITY_BUILD=OFF). clang-tidy needs a
#   full parse of every translation unit, so it takes minutes: for changes to the measurement, not
#   CI. A lambda over the limit is left out of the comparison: clang-tidy counts it only as part
#   of the function around it.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=check
limit=80
if [[ ${1:-} == --cross-check ]]; then
  [[ $# -ge 2 ]] || { echo "usage: $0 --cross-check BUILD_DIR [LIMIT]" >&2; exit 2; }
  mode=cross
  build=$2
  limit=${3:-80}
  root=$repo
  if [[ ! -f $build/compile_commands.json ]]; then
    echo "check_sizes: no $build/compile_commands.json" >&2
    exit 2
  fi
else
  root=${1:-$repo}
fi

# Allow-list: one entry a line, "PATH_GLOB[:FUNCTION] | reason". A glob alone excuses both the
# file's length and every function in it; with :FUNCTION it excuses that function only. An entry
# without a reason, or one that excuses nothing, fails the check.
allow_list='
'

checker=$repo/scripts/check_sizes.py

if [[ $mode == check ]]; then
  python3 "$checker" "$root" "$allow_list" "$limit" check
  exit
fi

# --cross-check: clang-tidy's figures against ours.
if ! command -v clang-tidy-14 > /dev/null; then
  echo "check_sizes: clang-tidy-14 is missing (scripts/setup.sh installs it)" >&2
  exit 2
fi
units=$(python3 -c '
import json, sys
for e in json.load(open(sys.argv[1] + "/compile_commands.json")):
    rel = e["file"].removeprefix(sys.argv[2] + "/")
    if rel.split("/")[0] in ("common", "sender", "receiver", "iotest", "linksim"):
        print(e["file"])' "$build" "$root" | sort -u)
if [[ -z $units ]]; then
  echo "check_sizes: no source file of the product in $build/compile_commands.json (a unity" \
    "build lists its combined files instead: configure one with CMAKE_UNITY_BUILD=OFF)" >&2
  exit 2
fi
config="{CheckOptions: [{key: readability-function-size.LineThreshold, value: $limit}]}"
# clang-tidy's status is not ours to judge: a unit it cannot parse shows as a difference below.
raw=$(printf '%s\n' $units | xargs -P2 -n1 clang-tidy-14 -p "$build" --quiet \
        --checks='-*,readability-function-size' --config="$config" 2> /dev/null || true)
tidy=$(echo "$raw" | python3 -c '
import re, sys
root = sys.argv[1] + "/"
name = None
for line in sys.stdin:
    m = re.match(r"(\S+):\d+:\d+: warning: function .(.+). exceeds", line)
    if m:
        path, name = m.group(1).removeprefix(root), m.group(2)
    m = re.match(r"\S+: note: (\d+) lines including", line)
    if m and name:
        print(path, name, m.group(1))
        name = None' "$root" | sort)
ours=$(python3 "$checker" "$root" "$allow_list" "$limit" list | sort)
# Our name for a lambda is "lambda"; clang-tidy does not report lambdas apart.
if diff <(echo "$tidy") <(echo "$ours" | grep -v ' lambda '); then
  echo "check_sizes: clang-tidy-14 and this script agree on all" \
    "$(echo "$tidy" | grep -c .) function(s) over $limit lines"
else
  echo "check_sizes: clang-tidy-14 (<) and this script (>) disagree" >&2
  exit 1
fi
