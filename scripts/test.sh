#!/usr/bin/env bash
# Does all set-up, builds, and runs the whole test suite through ctest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/build.sh"
cd "$repo/build"
ctest --output-on-failure --parallel 2 --timeout 300
