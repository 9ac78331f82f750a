#!/usr/bin/env bash
# scripts/build.sh and scripts/demo.sh against a stand-in cmake (on PATH, logging its arguments)
# in a copy of the scripts: --target builds only the targets named, the configure step is the same
# with or without targets (so a full build reuses what a partial one compiled), other arguments
# still reach the configure step, a --target without a name is refused with one line, and the
# demo builds only the two programs it runs.
# Usage: build_script_test.sh REPO
set -uo pipefail
repo=${1:?usage: build_script_test.sh REPO}
work=$(mktemp -d /tmp/ddft_build_script.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then
    failures=$((failures + 1))
    printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"
  fi
}

mkdir -p "$work/repo/scripts" "$work/path"
cp "$repo/scripts/build.sh" "$repo/scripts/demo.sh" "$work/repo/scripts/"
printf '#!/usr/bin/env bash\necho "setup: stand-in"\n' > "$work/repo/scripts/setup.sh"
printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$*" >> "%s"\n' "$work/cmake.log" > "$work/path/cmake"
chmod +x "$work/path/cmake"
export PATH="$work/path:$PATH"

# Runs the copy of build.sh with "$@": its status; the cmake calls are in $work/cmake.log.
build() {
  : > "$work/cmake.log"
  bash "$work/repo/scripts/build.sh" "$@" > "$work/out" 2> "$work/err"
}

build
check "all: status" 0 $?
all_configure=$(sed -n 1p "$work/cmake.log")
all_build=$(sed -n 2p "$work/cmake.log")
check "all: unity configure" 1 $(grep -c -- "-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16" <<< "$all_configure")
check "all: builds everything" "--build $work/repo/build --parallel $(nproc)" "$all_build"

build --target dd_file_send --target dd_file_receive
check "targets: status" 0 $?
check "targets: the same configure step" "$all_configure" "$(sed -n 1p "$work/cmake.log")"
check "targets: only those built" "$all_build --target dd_file_send dd_file_receive" \
  "$(sed -n 2p "$work/cmake.log")"

build -DDDFT_EXTRA=ON --target unit_tests
check "configure arguments: status" 0 $?
check "configure arguments: passed on" "$all_configure -DDDFT_EXTRA=ON" "$(sed -n 1p "$work/cmake.log")"
check "configure arguments: the target" "$all_build --target unit_tests" "$(sed -n 2p "$work/cmake.log")"

build --target
check "no target name: status" 2 $?
check "no target name: one line" \
  "build.sh: --target needs a target name (e.g. --target dd_file_send)" "$(cat "$work/err")"
check "no target name: nothing run" "" "$(cat "$work/cmake.log")"

# The demo asks build.sh for its two programs; a stand-in build.sh that fails stops it there.
printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$*" > "%s"\nexit 3\n' "$work/build.args" \
  > "$work/repo/scripts/build.sh"
DDFT_DEMO_DIR="$work/demo" bash "$work/repo/scripts/demo.sh" > /dev/null 2>&1
check "demo: stops when the build fails" 3 $?
check "demo: builds only what it runs" "--target dd_file_send --target dd_file_receive" \
  "$(cat "$work/build.args")"
check "demo: nothing generated before the build" "no" "$([[ -e $work/demo ]] && echo yes || echo no)"

if ((failures)); then
  echo "build_script_test.sh: $failures check(s) failed"
  exit 1
fi
echo "build_script_test.sh: build.sh and demo.sh build what they should"
