#!/usr/bin/env bash
# Throughput benchmark: the machine's own ceilings, then every stage pair of the product, in one
# run, so that figures are ratios measured side by side on this (possibly noisy) machine.
#
#   bash scripts/bench.sh [--smoke] [--durability] [--link] [--size SIZE] [--runs N] [--dir DIR]
#                         [--rate MB/s] [--pairs "P.."] [--rx-opts S] [--default-opts S]
#
#   --size SIZE  data per transfer (default 4G: larger than the page cache can hide once caches
#                are dropped; K/M/G suffixes)        --runs N   runs per cell (default 3; median)
#   --dir DIR    work folder on the disk to measure (default bench-work/ in the repository)
#   --rate R     sender --rate in MB/s; "auto" (default) paces each pair at 0.95 x the ceiling
#                that bounds it, as an operator sets the rate below what the receiving disk and
#                link sustain; 0 = unlimited (a disk-bound pair then overflows the ring: loss)
#   --pairs "P.." only these pairs (of mem-mem disk-mem mem-disk disk-disk), no small-files test
#                and no durability section: for finding a pair's loss-free rate
#   --rx-opts S  more dd_file_receive options for every transfer, e.g. "--direct-io off"
#   --durability only the ceilings and the durability section (4) (with --pairs: those pairs too)
#   --link       only the ceilings and the link section (5) (with --pairs or --durability: those
#                too)
#   --default-opts S  more dd_file_receive options for the "default" column of section (4) only,
#                e.g. "--write-mode rwd" to measure that mode against rw (not for --rx-opts: the
#                receiver refuses --write-mode twice)
#   --smoke      a quick run (256M, 1 run, short iperf3, 200 small files in section 4): checks
#                that everything works, asserts no target (CI runs it so the benchmark cannot rot);
#                it fails (status 1, each failed transfer named) when a program exits non-zero,
#                a file sent is not logged Passed (Not verified with --verify none), or a file
#                read from disk and written to disk differs from its source
#
# Measures: (1) reference ceilings with standard tools: fio sequential direct write and read of
# the work folder's disk, iperf3 UDP over loopback at the product's packet size; (2) the four
# pairs memory->memory (dd_file_send synthetic:SIZE -> dd_file_receive --sink null), disk->memory,
# memory->disk, disk->disk, each with --verify none, b2b and sha256; (3) 10,000 files of 16 KB;
# (4) durability: the receiver's default write mode (no --write-mode given; named as the receive
# log's start line names it) against --write-mode rw, on one 2 GiB file (memory source) and on
# 10,000 files of 16 KB in nested folders (disk source), runs interleaved default, rw, default, rw.
# Targets: the 2 GiB file's MiB/s (wall time) with the default at least 0.90 x rw; the small
# files' files/s with the default at least 0.50 x rw. (5) link settings: memory to memory
# unpaced (--rate 0, synthetic:SIZE, --sink null), the settings interleaved run by run: b2b, none,
# sha256, AES-GCM (--key-file), FEC 32:4, and b2b with the receiver's --gro off and with the
# sender's --gso off. Targets: b2b at least 2.5 GB/s with the two programs' CPU-s/GiB together at
# most 0.8; sha256, AES-GCM and FEC 32:4 each at least 0.8 x b2b, nothing lost; --gro off at
# most 1.2 CPU-s/GiB together. Then disk to disk at --rate 0 (settings d2d and d2d-tmpfs): one
# 2 GiB file written durably, against fio's direct write of it just before each run; target at
# least 0.85 x fio (the comment at section 5 says why the ring holds the whole file there).
# DDFT_LINK_SETTINGS="b2b none ..." runs only those settings (SETTING-wN: with the receiver's
# --workers N, e.g. aes-w2), and
# DDFT_BENCH_BIN=DIR another build's programs (with DDFT_BENCH_NO_BUILD=1), for a baseline.
# The receiver runs at nice -10 (as root), as the shipped service runs it (Nice=-10): with both
# programs on one host, an unpaced sender must not starve the receiver of the CPU it drains with.
# Writes to disk in (2) use --write-mode rwd (data synced before the rename), so a disk figure is
# the disk's, not the page cache's; caches are dropped before every run (as root).
# Prints a table and writes DIR/bench.json with each figure's ratio to the ceiling it is bound by.
#
# bash scripts/bench.sh --lanes [options of scripts/bench_lanes.sh] runs the lane-scaling
# benchmark instead (1, 2 and 4 lanes, each paced; then unpaced): see that script's header.
# bash scripts/bench.sh --journal [--entries N] [--runs N] runs the receiver's start-up benchmark
# with a journal of 1,000,000 files instead (scripts/bench_journal.sh); --history [--runs N] the
# cost on the wire of the sender's history (scripts/bench_history.sh).
# bash scripts/bench.sh --compress [options of scripts/bench_compress.sh] runs the compression
# benchmark instead (text and random corpora at --rate 100, --compress off/zstd/auto).
# bash scripts/bench.sh --channels [options of scripts/bench_channels.py] runs the channels
# benchmark instead: urgent files' latency under a saturating bulk file, and the bulk's rate.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${1:-}" == --history ]]; then
  shift
  exec bash "$repo/scripts/bench_history.sh" "$@"
fi
if [[ "${1:-}" == --journal ]]; then
  shift
  exec bash "$repo/scripts/bench_journal.sh" "$@"
fi
if [[ "${1:-}" == --lanes ]]; then
  shift
  exec bash "$repo/scripts/bench_lanes.sh" "$@"
fi
if [[ "${1:-}" == --channels ]]; then
  shift
  exec python3 "$repo/scripts/bench_channels.py" "$@"
fi
if [[ "${1:-}" == --compress ]]; then
  shift
  exec bash "$repo/scripts/bench_compress.sh" "$@"
fi
size=4G runs=3 dir="$repo/bench-work" rate=auto smoke=0 rx_opts="" pairs="" durability=0 link=0
default_opts=""
while (($#)); do
  case "$1" in
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --smoke) smoke=1 size=256M runs=1 ;;
    --size) size=$2; shift ;;
    --runs) runs=$2; shift ;;
    --dir) dir=$2; shift ;;
    --rate) rate=$2; shift ;;
    --rx-opts) rx_opts=$2; shift ;;
    --pairs) pairs=$2; shift ;;
    --durability) durability=1 ;;
    --link) link=1 ;;
    --default-opts) default_opts=$2; shift ;;
    *) echo "bench.sh: unknown argument '$1' (see the header of the script)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: --runs must be a positive number" >&2; exit 2; }
bytes=$(numfmt --from=iec "$size") || { echo "bench.sh: bad --size '$size'" >&2; exit 2; }

if [[ "${DDFT_BENCH_NO_BUILD:-0}" != 1 ]]; then bash "$repo/scripts/build.sh" > /dev/null; fi
bin=${DDFT_BENCH_BIN:-$repo/build/bin}  # another build's programs, for a before/after sitting
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
results="$dir/results.tsv"
: > "$results"
failures="$dir/failures.txt"  # what --smoke fails on: one line per failed transfer
: > "$failures"
port=$((41000 + RANDOM % 20000))
packet=8952

drop_caches() {
  sync
  if [[ -w /proc/sys/vm/drop_caches ]]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

echo "bench: work folder $dir, $size per transfer, $runs run(s) per cell" >&2

# 1. Ceilings. fio also leaves the source file for the disk pairs.
fio_bw() {  # fio_bw RW [FILE SIZE] -> MiB/s (direct IO; buffered, with a note, where the file
  # system refuses it). FILE defaults to the disk pairs' source, SIZE to --size.
  local direct file=${2:-$dir/source.bin} fsize=${3:-$bytes}
  for direct in 1 0; do
    if fio --name=ceiling --filename="$file" --rw="$1" --bs=1M --size="$fsize" \
      --direct=$direct --ioengine=io_uring --iodepth=16 --end_fsync=1 --output-format=json \
      > "$dir/fio.json" 2> "$dir/fio.err"; then
      ((direct)) || echo "bench: note: $dir refuses O_DIRECT; the $1 ceiling is buffered" >&2
      python3 -c "import json; j=json.load(open('$dir/fio.json'))['jobs'][0]; \
print(round(j['$1']['bw_bytes']/1048576, 1))"
      return
    fi
  done
  echo "bench: fio failed: $(tail -1 "$dir/fio.err")" >&2
  exit 1
}
drop_caches
write_ceiling=$(fio_bw write)
drop_caches
read_ceiling=$(fio_bw read)
iperf3 -s -1 -p "$port" > /dev/null 2>&1 &
sleep 0.5
iperf3 -c 127.0.0.1 -p "$port" -u -b 0 -l "$packet" -t $((smoke ? 2 : 5)) -J > "$dir/iperf.json"
wait
udp_ceiling=$(python3 -c "import json; s=json.load(open('$dir/iperf.json'))['end']['sum']; \
print(round(s['bytes']*(1-s['lost_percent']/100)/s['seconds']/1048576, 1))")
printf 'ceiling\twrite\t%s\nceiling\tread\t%s\nceiling\tudp\t%s\n' \
  "$write_ceiling" "$read_ceiling" "$udp_ceiling" >> "$results"
echo "bench: ceilings: disk write $write_ceiling, disk read $read_ceiling, UDP $udp_ceiling MiB/s" >&2

# A smoke run's check of a transfer to disk: true when SOURCE, a real file or folder (not
# synthetic:, whose bytes only the receiver's digest checks: Passed), arrived in out/ byte for
# byte; what differs goes to diff.txt.
same_on_disk() {  # same_on_disk SOURCE
  local copy
  copy="$dir/out/$(basename "$1")"
  [[ -e $1 ]] || return 0
  if [[ -d $1 ]]; then diff -rq "$1" "$copy" > "$dir/diff.txt" 2>&1; else cmp "$1" "$copy" > "$dir/diff.txt" 2>&1; fi
}

# 2. One transfer: prints "rate tx_cpu rx_cpu tx_rss_kb rx_rss_kb lost ok wall passed mode
# rx_start": rate
# is the first File: line's MiB/s, CPU and wall in s, wall from the sender's start to the
# receiver's exit (--once), passed the files verified (or delivered with --verify none), mode the
# write mode the receive log's start line names, rx_start the receiver's CPU s when it was ready
# (its ring faulted in). WRITE_MODE sets --write-mode (default rwd);
# WRITE_MODE=default gives none, so the receiver's own default is what runs. FILES is how many
# files SOURCE holds (default 1): ok needs every one logged Passed (or Not verified).
transfer() {  # transfer SOURCE SINK VERIFY [extra receiver args...]
  local source=$1 sink=$2 verify=$3
  shift 3
  rm -rf "$dir/out"
  mkdir -p "$dir/out"
  drop_caches
  local rx_args=(--listen "127.0.0.1:$port" --output "$dir/out" --once --quiet
    --log-file "$dir/receive.log")
  [[ "${WRITE_MODE:-rwd}" != default ]] && rx_args+=(--write-mode "${WRITE_MODE:-rwd}")
  [[ "$sink" == null ]] && rx_args+=(--sink null)
  local extra tx_extra
  read -r -a extra <<< "$rx_opts"
  rx_args+=("${extra[@]}")
  read -r -a tx_extra <<< "${TX_OPTS:-}"
  rm -f "$dir/receive.log"
  # The receiver runs at nice -10, as the shipped service does (packaging/dd_file_receive.service,
  # Nice=-10: the link's drain wins against other processes); as root only.
  local prio=()
  [[ $(id -u) == 0 ]] && prio=(nice -n -10)
  /usr/bin/time -f '%U %S %M' -o "$dir/rx.time" "${prio[@]}" "$bin/dd_file_receive" "${rx_args[@]}" \
    "$@" &
  local rx=$!
  for _ in $(seq 100); do grep -q "receiving on" "$dir/receive.log" 2> /dev/null && break; sleep 0.05; done
  # What starting cost the receiver (mostly faulting in its ring), so that CPU per GiB can also be
  # given without it: a daemon pays it once, not per transfer.
  local rx_pid rx_start=0
  rx_pid=$(pgrep -P "$rx" -x dd_file_receive || true)
  [[ -n $rx_pid ]] && rx_start=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' \
    "/proc/$rx_pid/stat" 2> /dev/null || echo 0)
  # A failing sender must not end the benchmark (this runs in a subshell under set -e): its
  # status is recorded, and the run counts as failed.
  local tx_rc=0 rx_rc=0 t0=$EPOCHREALTIME
  /usr/bin/time -f '%U %S %M' -o "$dir/tx.time" "$bin/dd_file_send" "$source" \
    --dest "127.0.0.1:$port" --rate "$pair_rate" --verify "$verify" --quiet \
    --log-file "$dir/send.log" "${tx_extra[@]}" || tx_rc=$?
  ((tx_rc == 0)) || kill "$rx" 2> /dev/null || true  # no session will ever end it
  wait $rx || rx_rc=$?
  local t1=$EPOCHREALTIME
  ((tx_rc == 0)) || echo "bench: dd_file_send exited with status $tx_rc: $(tail -1 "$dir/send.log")" >&2
  local same=1
  ((smoke)) && [[ $sink == disk ]] && ! same_on_disk "$source" && same=0
  python3 - "$dir" "$((rx_rc | tx_rc))" "$t0" "$t1" "$rx_start" "${FILES:-1}" "$same" "$smoke" \
    "$source -> $sink, --verify $verify${*:+, receiver $*}" << 'PY'
import os, re, sys
d, rc, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rx_start = float(sys.argv[5])
files, same, smoke, what = int(sys.argv[6]), sys.argv[7] == "1", sys.argv[8] == "1", sys.argv[9]
log = open(f"{d}/receive.log").read() if os.path.exists(f"{d}/receive.log") else ""
rates = [float(x) for x in re.findall(r"File: .*Rate: ([0-9.]+) \(MB/s\)", log)]
lost = re.findall(r"packets: \d+ received, (\d+) lost", log)
def t(name):  # a program killed before /usr/bin/time wrote its figures counts 0
    f = open(f"{d}/{name}.time").read().split()[-3:] if os.path.exists(f"{d}/{name}.time") else []
    return (float(f[0]) + float(f[1]), int(f[2])) if len(f) == 3 else (0.0, 0)
tx_cpu, tx_rss = t("tx")
rx_cpu, rx_rss = t("rx")
passed = len(re.findall(r" Passed| Not verified", log))
# The start line names the mode in effect ("...; mode rw; ..."), whether or not it was asked for.
start = next((l for l in log.splitlines() if "receiving on" in l), "")
mode = re.search(r"; mode ([\w.+-]+)", start) or re.search(r"\bmode ([\w.+-]+)", start)
ok = passed == files and rc == 0 and same
if smoke and not ok:
    why = [f"status {rc}"] if rc else []
    if passed != files:
        why.append(f"{passed} of {files} file(s) Passed")
    if not same:
        why.append("the copy on disk differs from its source: "
                   + open(f"{d}/diff.txt").read().strip().replace("\n", "; ")[:300])
    with open(f"{d}/failures.txt", "a") as f:
        f.write(f"{what}: {', '.join(why)}\n")
print(rates[0] if rates else 0.0, tx_cpu, rx_cpu, tx_rss, rx_rss, lost[-1] if lost else -1,
      1 if ok else 0, round(t1 - t0, 3), passed,
      mode.group(1) if mode else "unknown", rx_start)
PY
}

# Sections: everything by default; --pairs and --durability each select their own (and both may
# be given); the ceilings always run, since pacing is derived from them.
run_pairs=1 run_small=1 run_durability=1 run_link=1
if [[ -n "$pairs" ]] || ((durability)) || ((link)); then
  run_small=0
  [[ -n "$pairs" ]] || run_pairs=0
  ((durability)) || run_durability=0
  ((link)) || run_link=0
fi
if ((run_pairs)); then pairs=${pairs:-mem-mem disk-mem mem-disk disk-disk}; fi

for pair in $pairs; do
  src=synthetic:$bytes
  [[ $pair == disk-* ]] && src="$dir/source.bin"
  sink=disk
  [[ $pair == *-mem ]] && sink=null
  case $pair in
    mem-mem) bound=$udp_ceiling ;;
    disk-mem) bound=$(python3 -c "print(min($read_ceiling, $udp_ceiling))") ;;
    *) bound=$(python3 -c "print(min($write_ceiling, $udp_ceiling))") ;;
  esac
  pair_rate=$rate
  share=1
  # Source and destination on one device: it carries the read and the write of every byte, so
  # the pair can only go at about half of what the device writes.
  if [[ $pair == disk-disk && $(stat -c %d "$dir/source.bin") == $(stat -c %d "$dir") ]]; then
    share=2
    echo "bench: disk-disk: source and destination share one device; pacing at half its ceiling" >&2
  fi
  [[ $rate == auto ]] && pair_rate=$(python3 -c "print(int(0.95 * $bound / $share))")
  echo "bench: $pair at --rate $pair_rate" >&2
  for verify in none b2b sha256; do
    for run in $(seq "$runs"); do
      read -r r txc rxc txm rxm lost ok _ < <(transfer "$src" "$sink" "$verify")
      printf 'run\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pair" "$verify" "$run" "$r" \
        "$txc" "$rxc" "$txm" "$rxm" "$lost" "$ok" >> "$results"
      echo "bench: $pair $verify run $run: $r MiB/s, lost $lost" >&2
    done
  done
done

# 3. Many small files: 10,000 x 16 KB (1,000 in the smoke run), b2b, disk to disk.
if ((run_small)); then
  count=$((smoke ? 1000 : 10000))
  rm -rf "$dir/small"
  mkdir -p "$dir/small"
  python3 -c "
import os
blk = os.urandom(16384)
for i in range($count):
    d = '$dir/small/d%03d' % (i // 100)
    os.makedirs(d, exist_ok=True)
    with open('%s/f%05d.bin' % (d, i), 'wb') as f: f.write(blk[i % 16:] + blk[:i % 16])
"
  drop_caches
  start=$(date +%s.%N)
  pair_rate=$rate
  [[ $rate == auto ]] && pair_rate=$(python3 -c "print(int(0.95 * min($write_ceiling, $udp_ceiling)))")
  read -r r txc rxc txm rxm lost ok _ < <(WRITE_MODE=rw FILES=$count transfer "$dir/small" disk b2b)
  elapsed=$(python3 -c "import time; print(round(time.time() - $start, 2))")
  passed=$(grep -c " B2B Passed" "$dir/receive.log" || true)
  printf 'small\t%s\t%s\t%s\t%s\n' "$count" "$elapsed" "$passed" "$lost" >> "$results"
  echo "bench: $count small files: $elapsed s, $passed verified" >&2
fi

# 4. Durability: what the receiver's default write mode costs against --write-mode rw. The
# default runs with no --write-mode at all (plus --default-opts), so it measures whatever the
# receiver ships, and is labelled by the mode its log's start line names. Cells: one large file
# from memory (synthetic: nothing read from disk, so the disk only writes) and many 16 KB files
# in nested folders from disk (real files: what the folder tree and per-file syncs cost), b2b.
# Runs alternate default, rw, default, rw... so that the machine's noise hits both columns alike.
# The figure is wall time from the sender's start to the receiver's exit (--once), not the File:
# line's rate: the exit comes after every sync, rename and folder sync the mode does, whatever
# the receiver logs before them (the File: rate is kept as a second figure).
if ((run_durability)); then
  big=2G
  ((smoke)) && big=256M
  big_bytes=$(numfmt --from=iec "$big")
  count=$((smoke ? 200 : 10000))
  tree="$dir/durable-small"
  rm -rf "$tree"
  # 100 files per folder, two levels: a0/b0/f00000.bin ... a9/b9/f09999.bin.
  python3 -c "
import os
for i in range($count):
    d = '$tree/a%d/b%d' % (i // 1000, i // 100 % 10)
    os.makedirs(d, exist_ok=True)
    with open('%s/f%05d.bin' % (d, i), 'wb') as f: f.write(os.urandom(16384))
"
  pair_rate=$rate
  [[ $rate == auto ]] && pair_rate=$(python3 -c "print(int(0.95 * min($write_ceiling, $udp_ceiling)))")
  read -r -a default_args <<< "$default_opts"
  echo "bench: durability: $big file and $count x 16 KB files at --rate $pair_rate," \
    "default${default_opts:+ ($default_opts)} against rw" >&2
  for work in large small; do
    if [[ $work == large ]]; then
      src=synthetic:$big_bytes files=1 moved=$big_bytes
    else
      src=$tree files=$count moved=$((count * 16384))
    fi
    for run in $(seq "$runs"); do
      for column in default rw; do
        args=()
        [[ $column == default ]] && args=("${default_args[@]}")
        read -r r txc rxc txm rxm lost ok wall passed mode _ < <(WRITE_MODE=$column \
          FILES=$files transfer "$src" disk b2b "${args[@]}")
        printf 'durable\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
          "$work" "$column" "$mode" "$run" "$moved" "$files" "$wall" "$r" "$txc" "$rxc" "$txm" \
          "$rxm" "$lost" "$passed" "$ok" >> "$results"
        echo "bench: durability $work $column (mode $mode) run $run: $wall s, $passed of" \
          "$files passed, lost $lost" >&2
      done
    done
  done
fi

# 5. Link settings, memory to memory at --rate 0: what each costs in CPU per GiB on each side,
# and whether the receiver keeps up (nothing lost). Settings interleaved run by run.
#
# The setting d2d is disk to disk instead: fio writes one 2 GiB file (256 MiB in the smoke run)
# with direct I/O into the work folder, then dd_file_send sends that file at --rate 0 and the
# receiver writes it durably (rwd) into the same folder; MiB/s from the wall time (sender's start
# to the receiver's exit, after the file's sync and rename), fio's from its own (with its final
# fsync). fio runs again before each transfer, since a shared disk's speed drifts within minutes.
# With --rate 0 the sender outruns a disk slower than the link, and a diode cannot push back: the
# receiver holds the surplus in its ring, so the ring here is sized to hold the whole file
# (--buffer-mb: the file plus 1 GiB). With the default 1 GiB ring, whatever exceeds what the ring
# and the disk absorb while it is sent is lost (the file fails cleanly): pace with --rate then.
#
# d2d-tmpfs is the same with the sent file copied to /dev/shm first: on a one-disk machine the
# sender's reading of the file shares the disk with the receiver's writing, which fio's write
# alone does not (on a diode the two ends are two hosts); this one measures the receiver's
# writing against fio's with nothing else on the disk.
disk_to_disk() {  # disk_to_disk RUN SETTING
  local d2d_size=2G
  ((smoke)) && d2d_size=256M
  local d2d_bytes d2d_file=$dir/d2d.bin source fio_rate
  d2d_bytes=$(numfmt --from=iec "$d2d_size")
  drop_caches
  fio_rate=$(fio_bw write "$d2d_file" "$d2d_size")
  source=$d2d_file
  if [[ $2 == d2d-tmpfs ]]; then
    source=/dev/shm/ddft-bench-d2d.bin
    cp "$d2d_file" "$source"
  fi
  local r txc rxc txm rxm lost ok wall ring_mb=$((d2d_bytes / 1048576 + 1024))
  read -r r txc rxc txm rxm lost ok wall _ < <(rx_opts="$rx_opts --buffer-mb $ring_mb" \
    transfer "$source" disk b2b)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$1" "$d2d_bytes" "$fio_rate" \
    "$wall" "$txc" "$rxc" "$txm" "$rxm" "$lost" "$ok" >> "$results"
  echo "bench: link $2 run $1: fio $fio_rate MiB/s, transfer $(python3 -c \
    "print(round($d2d_bytes / 1048576 / $wall, 1))") MiB/s, lost $lost" >&2
  rm -f "$d2d_file" /dev/shm/ddft-bench-d2d.bin
  rm -rf "$dir/out"
}

if ((run_link)); then
  key="$dir/link.key"
  (umask 077 && head -c 32 /dev/urandom > "$key")
  pair_rate=0
  echo "bench: link settings, memory to memory at --rate 0" >&2
  for run in $(seq "$runs"); do
    for setting in ${DDFT_LINK_SETTINGS:-b2b none sha256 aes fec gro-off gso-off d2d d2d-tmpfs}; do
      verify=b2b tx="" rxo="" base=$setting
      # SETTING-wN: the same with the receiver's --workers N (open workers).
      if [[ $setting =~ ^(.+)-w([0-9]+)$ ]]; then
        base=${BASH_REMATCH[1]} rxo="--workers ${BASH_REMATCH[2]}"
      fi
      case $base in
        none | sha256) verify=$base ;;
        aes) tx="--key-file $key" rxo+=" --key-file $key" ;;
        fec) tx="--fec 32:4" ;;
        gro-off) rxo+=" --gro off" ;;
        gso-off) tx="--gso off" ;;
        d2d | d2d-tmpfs)
          disk_to_disk "$run" "$setting"
          continue
          ;;
      esac
      read -r r txc rxc txm rxm lost ok _ _ _ rxs < <(TX_OPTS=$tx rx_opts="$rx_opts $rxo" \
        transfer "synthetic:$bytes" null "$verify")
      printf 'link\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$setting" "$run" "$r" "$txc" \
        "$rxc" "$txm" "$rxm" "$lost" "$ok" "$rxs" >> "$results"
      echo "bench: link $setting run $run: $r MiB/s, lost $lost" >&2
    done
  done
  rm -f "$key"
fi

python3 "$repo/scripts/bench_report.py" "$results" "$bytes" "$dir/bench.json"
rm -f "$dir/source.bin"
rm -rf "$dir/out" "$dir/small" "$dir/durable-small"
# A smoke run asserts no speed target, but every transfer must have worked.
if ((smoke)) && [[ -s $failures ]]; then
  echo "bench: smoke run FAILED: $(wc -l < "$failures") transfer(s) did not deliver every file:" >&2
  sed 's/^/  /' "$failures" >&2
  exit 1
fi
