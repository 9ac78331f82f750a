#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/) with clang, ASan and UBSan into build-fuzz/, and
# runs each for a bounded time, starting from a temporary copy of its seed corpus
# (tests/fuzz/corpus/<name>/ is never modified).
#
#   bash scripts/fuzz.sh [SECONDS]   seconds per harness: SECONDS, else $DDFT_FUZZ_SECONDS, else 30
#   bash scripts/fuzz.sh --seeds     regenerates tests/fuzz/corpus/ with make_seeds (then commit it)
#   bash scripts/fuzz.sh --build-only  builds the harnesses, runs nothing
#
# Prints one line per harness with its run count. Exits 1 when a harness found a crash, a leak, a
# timeout or too much memory, naming the reproducer (kept below build-fuzz/findings/). Replay one
# with  build-fuzz/bin/fuzz_<name> FILE  (DDFT_FUZZ_LOG=1 shows the receiver's log), or add it to
# the corpus once the bug is fixed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build-fuzz"
harnesses=(packet announce path receiver)

seeds=0 build_only=0
seconds=${DDFT_FUZZ_SECONDS:-30}
case "${1:-}" in
  "") ;;
  --seeds) seeds=1 ;;
  --build-only) build_only=1 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) seconds=$1 ;;
esac
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS must be a positive number, got '$seconds'" >&2
  exit 2
fi

bash "$repo/scripts/setup.sh"
mkdir -p "$build"
# Only the harnesses and the seed generator are built: the programs and the test suite are not
# needed here (scripts/sanitize.sh runs those under ASan and UBSan). -O1 with line tables is what
# OSS-Fuzz builds with: it builds fast and its stack traces name file and line.
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DDDFT_FUZZ=ON -DDDFT_BUILD_TESTS=OFF -DDDFT_INSTALL=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
  > "$build/configure.log" 2>&1 ||
  { echo "fuzz.sh: configuring build-fuzz failed (see $build/configure.log)" >&2; exit 1; }
cmake --build "$build" --parallel "$(nproc)" --target ddft_fuzz_all
((build_only)) && exit 0

if ((seeds)); then
  "$build/bin/make_seeds" "$repo/tests/fuzz/corpus"
  exit 0
fi

# The corpus copies and the harnesses' sandboxes (the receiver's output folder) go on tmpfs when
# there is one: the receiver harnesses run about three times faster there than on a disk.
tmp=${TMPDIR:-/tmp}
if [[ -d /dev/shm && -w /dev/shm ]]; then tmp=/dev/shm; fi
work=$(mktemp -d "$tmp/ddft_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
# fuzz_one NAME: runs one harness; prints its line, and returns 1 when it found something.
fuzz_one() {
  local name=$1
  local findings="$build/findings/$name" log="$build/findings/$name.log"
  rm -rf "$findings" "$log"
  mkdir -p "$findings"
  cp -r "$repo/tests/fuzz/corpus/$name" "$work/$name"
  mkdir -p "$work/tmp-$name"  # the harness's sandbox, left behind by a crash: removed with $work
  local before after done_line rc=0
  before=$(find "$work/$name" -type f | wc -l)
  # -timeout: one input may take this long (s) before it counts as a hang; -rss_limit_mb bounds
  # the memory (and each malloc) of the process.
  (cd "$findings" && TMPDIR="$work/tmp-$name" "$build/bin/fuzz_$name" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -artifact_prefix="$findings/" \
    -print_final_stats=1 "$work/$name") > "$log" 2>&1 || rc=$?
  after=$(find "$work/$name" -type f | wc -l)
  done_line=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 || true)
  if ((rc == 0)) && [[ -n "$done_line" ]]; then
    local runs secs
    read -r _ runs _ _ secs _ <<< "$done_line"
    echo "fuzz: $name: $runs runs in $secs s, corpus $before -> $after inputs, nothing found"
    return 0
  fi
  local reproducer summary
  reproducer=$(grep -Eo 'Test unit written to [^ ]+' "$log" | tail -1 | awk '{print $NF}' ||
    true)
  [[ -z "$reproducer" ]] && reproducer=$(find "$findings" -type f | head -1)
  summary=$(grep -E '^SUMMARY: |^==[0-9]+== ERROR: |fuzz: invariant broken|ERROR: libFuzzer' \
    "$log" | head -1 | sed 's/^==[0-9]*== //' || true)
  echo "fuzz: $name: FOUND ${summary:-a failure (status $rc)};" \
    "reproducer ${reproducer:-none written}; log $log" >&2
  return 1
}

# One harness per core at a time: each still gets its SECONDS of a core of its own.
failed=0
running=()
for name in "${harnesses[@]}"; do
  if ((${#running[@]} >= $(nproc))); then
    wait "${running[0]}" || failed=1
    running=("${running[@]:1}")
  fi
  fuzz_one "$name" &
  running+=($!)
done
for pid in "${running[@]}"; do wait "$pid" || failed=1; done
exit $failed
