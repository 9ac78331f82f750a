#!/usr/bin/env bash
# Does all set-up, builds, and runs every test: the whole ctest suite (build/), the Debian package
# built from build/ and checked (scripts/package_check.sh), the same suite again under
# AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-asan/), then each
# fuzz harness for a bounded time (scripts/fuzz.sh, build-fuzz/; DDFT_FUZZ_SECONDS per
# harness, default 30). Stops at the first part that fails; prints the time each part took.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
times=()
part() {  # part NAME COMMAND...: runs it and records its duration
  local name=$1 start=$SECONDS
  shift
  "$@"
  times+=("$name $((SECONDS - start)) s")
}
run_ctest() { (cd "$repo/build" && ctest --output-on-failure --parallel 2 --timeout 300); }

part "build" bash "$repo/scripts/build.sh"
part "tests" run_ctest
part "package" bash "$repo/scripts/package_check.sh" "$repo/build"
part "sanitizers (build and tests)" bash "$repo/scripts/sanitize.sh"
part "fuzzing (build and runs)" bash "$repo/scripts/fuzz.sh"
echo "test.sh: all passed; $(IFS=';'; echo "${times[*]}" | sed 's/;/, /g')"
