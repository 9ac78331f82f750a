#!/usr/bin/env bash
# Installs what the build needs (scripts/setup.sh), then configures and builds into build/.
# Binaries end up in build/bin/. Extra arguments go to the CMake configure step.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/setup.sh"
# Unity build: each library and the unit tests compile as a few large translation units, which
# parses the shared headers a few times instead of a hundred and halves the build on two cores. A
# build of your own for editing may leave it off: one changed file then recompiles alone.
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDDFT_WARNINGS_AS_ERRORS=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "$@"
cmake --build "$repo/build" --parallel "$(nproc)"
