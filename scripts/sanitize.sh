#!/usr/bin/env bash
# Builds everything with gcc under AddressSanitizer and UndefinedBehaviorSanitizer into
# build-asan/ (-DDDFT_SANITIZE="address;undefined": every target compiled and linked with them,
# UBSan fatal) and runs the whole ctest suite there. The tests start the programs from that build
# tree (dd_file_send, dd_file_receive, dd_linksim, dd_iotest), so those run sanitized too.
#
#   bash scripts/sanitize.sh [CTEST ARGS...]     e.g. -R e2e to run part of the suite
#   bash scripts/sanitize.sh --build-only         builds, runs nothing (scripts/test.sh builds
#                                                 beside the normal suite's run)
#
# Every sanitizer report, from a test or from a program a test started, also goes to a file
# below build-asan/sanitizer-reports/: the run fails when any was written, even if the test that
# started the program did not look at its exit status.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build-asan"
reports="$build/sanitizer-reports"

# Tests left out under the sanitizers, each with the reason (a ctest -E regex):
#   bench.*  the benchmarks' smoke runs: they measure speed, which means nothing under ASan, and
#            take a minute of the suite run one at a time; the code they run is run sanitized by
#            every end-to-end test, and the normal suite (build/) runs them.
#   scripts.format, sizes, layers, docs, reconcile (and sizes_planted, layers_planted,
#            docs_planted, their proofs) checks of the source and of the Python reconciler, which
#            no sanitizer sees: the normal suite runs them.
excluded='^(bench\.|scripts\.(format|sizes|sizes_planted|layers|layers_planted|docs|docs_planted|reconcile)$)'
# The tests that move GiBs (the lanes test's striped file, the loss soak) run at a small size
# here: the normal suite runs them at full size, and the sanitizers find the same faults on less
# data.
export DDFT_TEST_SMALL=1

build_only=0
if [[ "${1:-}" == --build-only ]]; then build_only=1; shift; fi

bash "$repo/scripts/setup.sh"
mkdir -p "$build"
# Warnings are not errors here: with the sanitizers gcc 12 warns falsely inside libstdc++
# (-Wmaybe-uninitialized in <regex>); the normal build (scripts/build.sh) keeps them errors.
# -O1 -g1 (line tables): what ASan is usually run with; it builds in half the time of -O2 -g and
# its stack traces still name file and line.
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DDDFT_SANITIZE="address;undefined" -DDDFT_WARNINGS_AS_ERRORS=OFF -DDDFT_INSTALL=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
  > "$build/configure.log" 2>&1 ||
  { echo "sanitize.sh: configuring build-asan failed (see $build/configure.log)" >&2; exit 1; }
cmake --build "$build" --parallel "$(nproc)"
((build_only)) && exit 0

rm -rf "$reports"
mkdir -p "$reports"
# halt_on_error: the first error ends the process (UBSan is fatal anyway, -fno-sanitize-recover);
# detect_leaks: LeakSanitizer runs at every exit; log_path: each report also in a file per process.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:print_stacktrace=1:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
export LSAN_OPTIONS="print_suppressions=0"

rc=0 report_rc=0
exclude=()
[[ -n "$excluded" ]] && exclude=(-E "$excluded")
rm -f "$build/ctest-results.xml"
(cd "$build" && ctest --output-on-failure --parallel 2 --timeout 600 "${exclude[@]}" \
  --output-junit "$build/ctest-results.xml" "$@") || rc=$?
# What was skipped and why; a required test skipped on a host that can run it fails the pass (the
# listing: every test of the suite, since this pass leaves some out on purpose).
(cd "$build" && ctest -N) > "$build/ctest-listing.txt"
python3 "$repo/scripts/ctest_report.py" "$build/ctest-results.xml" --listing \
  "$build/ctest-listing.txt" --required "$repo/tests/required_tests.txt" |
  tee "$build/ctest-report.txt" || report_rc=1

found=0
for f in "$reports"/*; do
  [[ -e "$f" ]] || continue
  # A program a test runs under strace (scripts.systemd) cannot be checked for leaks: LeakSanitizer
  # refuses to run under ptrace and says only that. Its other checks still ran.
  if grep -q 'LeakSanitizer does not work under ptrace' "$f" && ! grep -q 'SUMMARY:' "$f"; then
    echo "sanitize.sh: note: a program ran under ptrace (strace): leaks not checked ($f)"
    continue
  fi
  found=1
  summary=$(grep -m1 -E '^SUMMARY: |runtime error:' "$f" || head -1 "$f")
  echo "sanitize.sh: sanitizer report $f: $summary" >&2
done
if ((found)); then exit 1; fi
if ((rc != 0)); then
  echo "sanitize.sh: tests failed under ASan/UBSan (see the ctest output above)" >&2
  exit 1
fi
if ((report_rc != 0)); then
  echo "sanitize.sh: a required test did not run (see the ctest_report lines above)" >&2
  exit 1
fi
echo "sanitize.sh: every test passed under ASan and UBSan, no sanitizer report" \
  "(excluded: ${excluded:-none})"
