#!/usr/bin/env bash
# Installs what the build needs (scripts/setup.sh), then configures and builds into build/.
# Binaries end up in build/bin/. Extra arguments go to the CMake configure step.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/setup.sh"
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDDFT_WARNINGS_AS_ERRORS=ON "$@"
cmake --build "$repo/build" --parallel "$(nproc)"
