#!/usr/bin/env bash
# Installs what the build needs (scripts/setup.sh), then configures and builds into build/.
# Binaries end up in build/bin/.
#   bash scripts/build.sh [--target NAME]... [CMAKE_ARGS...]
# --target NAME (repeatable) builds only those targets (dd_file_send, unit_tests...; default:
# all); every other argument goes to the CMake configure step. The configure step is the same
# whatever is built, so a later full build reuses every object an earlier partial one compiled.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
targets=()
configure=()
while (($#)); do
  case $1 in
    --target)
      if (($# < 2)) || [[ -z $2 ]]; then
        echo "build.sh: --target needs a target name (e.g. --target dd_file_send)" >&2
        exit 2
      fi
      targets+=("$2")
      shift 2
      ;;
    *)
      configure+=("$1")
      shift
      ;;
  esac
done
bash "$repo/scripts/setup.sh"
# Unity build: each library and the unit tests compile as a few large translation units, which
# parses the shared headers a few times instead of a hundred and halves the build on two cores. A
# build of your own for editing may leave it off: one changed file then recompiles alone.
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDDFT_WARNINGS_AS_ERRORS=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
  "${configure[@]}"
cmake --build "$repo/build" --parallel "$(nproc)" ${targets[@]+--target "${targets[@]}"}
