#!/usr/bin/env bash
# The receiver's start-up with a large journal (OUTPUT/.ddft/outcomes): the time from starting
# dd_file_receive to its "receiving on" line, with an empty journal and with one of N files
# (default 1,000,000: P lines of 10 sender sessions, as a week of a busy hot folder leaves them),
# runs interleaved, median of --runs (3). Target: at most 2 s with 1,000,000 entries. The ring is
# 128 MiB so that the figure is the journal's, not the allocation of a large buffer.
#
#   bash scripts/bench.sh --journal [--entries N] [--runs N] [--dir DIR]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
entries=1000000 runs=3 dir=$repo/bench-work/journal
while (($#)); do
  case "$1" in
    --entries) entries=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "bench_journal.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=${DDFT_BENCH_BIN:-$repo/build/bin}
[[ -n "${DDFT_BENCH_NO_BUILD:-}" ]] || bash "$repo/scripts/build.sh" > /dev/null
rm -rf "$dir"
mkdir -p "$dir/empty" "$dir/full/.ddft"
python3 - "$dir/full/.ddft/outcomes" "$entries" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(25)
with open(path, "w") as f:
    for i in range(1, n + 1):
        session = 0x5E55100000000000 + i * 10 // n
        f.write(f'P {session:016x} {i} {rnd.randint(1, 10**8)} B2B {rnd.getrandbits(128):032x} '
                f'"site{i % 7}/2026-11-{1 + i % 28:02d}/report-{i}.csv" 0 0\n')
PY
# Seconds from start to the "receiving on" line for output folder $1.
start_time() {
  local out=$1 log=$dir/rx.log port
  port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  rm -f "$log"
  local t0 t1
  t0=$(date +%s.%N)
  "$bin/dd_file_receive" --listen "127.0.0.1:$port" --output "$out" --buffer-mb 128 \
    --log-file "$log" > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 6000); do
    grep -q "receiving on" "$log" 2> /dev/null && break
    sleep 0.005
  done
  t1=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid" || true
  grep -q "receiving on" "$log" || { echo "bench_journal.sh: the receiver did not start" >&2; exit 1; }
  echo "$t1 - $t0" | bc
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
empty=() full=()
for ((r = 0; r < runs; r++)); do
  empty+=("$(start_time "$dir/empty")")
  full+=("$(start_time "$dir/full")")
done
e=$(printf '%s\n' "${empty[@]}" | median)
f=$(printf '%s\n' "${full[@]}" | median)
lines=$(grep -vc '^T ' "$dir/full/.ddft/outcomes")
printf 'journal start-up (median of %d): empty %.3f s; %d entries %.3f s (%.1f MB; %d kept)\n' \
  "$runs" "$e" "$entries" "$f" "$(echo "$(stat -c %s "$dir/full/.ddft/outcomes") / 1000000" | bc -l)" "$lines"
awk -v f="$f" 'BEGIN { exit !(f <= 2.0) }' && echo "target (at most 2 s): met" ||
  echo "target (at most 2 s): NOT met"
