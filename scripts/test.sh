#!/usr/bin/env bash
# Does all set-up, builds, and runs every test: the whole ctest suite (build/), the Debian package
# built from build/ and checked (scripts/package_check.sh), the unit, integration and script tests
# again under AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-asan/:
# source checks left out, GiB-sized script tests small), then each fuzz harness for a bounded time
# (scripts/fuzz.sh, build-fuzz/; DDFT_FUZZ_SECONDS per harness, default 30). The sanitizer and
# fuzzing builds run while the normal suite does. Stops at the first part that fails; prints the
# time each part took.
#
# After each ctest pass, scripts/ctest_report.py lists every skipped test with its reason and fails
# the pass when a test of tests/required_tests.txt was skipped on a host that can run it; a test
# this host cannot run is named on a NOT TESTED line. The summary at the end repeats those lines.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
times=()
part() {  # part NAME COMMAND...: runs it and records its duration
  local name=$1 start=$SECONDS
  shift
  "$@"
  times+=("$name $((SECONDS - start)) s")
}
# What each ctest pass skipped, and the required tests it missed (scripts/ctest_report.py), for
# the summary at the end.
report="$repo/build/ctest-report.txt"
run_ctest() {
  local rc=0
  rm -f "$repo/build/ctest-results.xml"
  (cd "$repo/build" && ctest --output-on-failure --parallel 2 --timeout 300 \
    --output-junit "$repo/build/ctest-results.xml") || rc=$?
  python3 "$repo/scripts/ctest_report.py" "$repo/build/ctest-results.xml" \
    --required "$repo/tests/required_tests.txt" | tee "$report" || rc=1
  return "$rc"
}
# The skips and the tests a host could not run, of both passes, once more at the end where they
# cannot be missed.
summary() {
  { grep -hE '^ctest_report: (skipped|partly skipped|NOT TESTED|FAIL)' "$report" \
    "$repo/build-asan/ctest-report.txt" 2> /dev/null || true; } | sed 's/^ctest_report: /test.sh: /'
}

# The sanitizer and fuzzing builds run beside the normal suite, in a process group of their own
# (stopped with the script): the suite must pass on a loaded machine anyway (docs/testing.md), and
# after it the two builds would cost their whole time.
builds_log="$repo/build/other-builds.log"
builds=
trap '[[ -n "$builds" ]] && kill -- "-$builds" 2> /dev/null' EXIT
wait_builds() {
  wait "$builds" && return 0
  echo "test.sh: the sanitizer or fuzzing build failed; the end of $builds_log:" >&2
  tail -n 30 "$builds_log" >&2
  return 1
}

part "build" bash "$repo/scripts/build.sh"
setsid bash -c 'bash "$0/scripts/sanitize.sh" --build-only && bash "$0/scripts/fuzz.sh" --build-only' \
  "$repo" > "$builds_log" 2>&1 &
builds=$!
part "tests (the sanitizer and fuzzing builds beside them)" run_ctest
part "package" bash "$repo/scripts/package_check.sh" "$repo/build"
part "sanitizer and fuzzing builds (what was left)" wait_builds
builds=
part "sanitizers (tests)" bash "$repo/scripts/sanitize.sh"
part "fuzzing (runs)" bash "$repo/scripts/fuzz.sh"
summary
echo "test.sh: all passed; $(IFS=';'; echo "${times[*]}" | sed 's/;/, /g')"
