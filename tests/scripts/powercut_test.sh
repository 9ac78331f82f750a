#!/usr/bin/env bash
# A power cut, imitated without special hardware: does "Passed" in the receive log mean "on disk
# and still there after the power goes"? Usage: powercut_test.sh DD_FILE_SEND DD_FILE_RECEIVE
#
# The receiver writes into an ext4 image on /dev/shm, loop-mounted; its log goes outside the image.
# At the instant a `File: ... Passed` line appears, receiver and sender are stopped (SIGSTOP) and
# the image file is copied, with no sync: a sync would flush exactly what a power cut loses, while
# the copy holds only what the file system had handed to its "disk" (the loop device) by then.
# Then both go on (SIGCONT). Each copy is later loop-mounted (ext4 replays its journal, as after a
# power cut) and every file the log had called Passed at the copy must be there, byte for byte.
#
# The workload: one large file (written with O_DIRECT in whole blocks), 1,000 small files in
# nested folders (page cache), and one name sent twice in two sessions (--on-collision rename
# keeps the old one as same.1.dat: both must be right). Copies: after the first Passed, in the
# middle, after the last. Modes: the default (no --write-mode, durable by issue 15), rwd and rws
# must lose nothing; rw (never syncs) must be seen to lose at least one Passed file.
#
# Why rw reliably loses here (measured: every run, 10 of 10): ext4 commits its journal 5 s after a
# transaction begins (commit=5, the default), and nothing else forces a commit when no one syncs
# (the images are far below any dirty-page threshold). Copy 1 is taken well under a second after
# the image was mounted and first written, so the first Passed file's rename, and its data, are
# still only in RAM: the copy lacks it. Copies 2 and 3 are taken within milliseconds of a Passed
# line and usually lose hundreds (all of them when the run is shorter than 5 s).
#
# Needs root and loop devices: otherwise it prints SKIPPED and exits 77.
set -uo pipefail
send_bin=$1 recv_bin=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=fs_test_lib.sh
source "$here/fs_test_lib.sh"
fs_test_init powercut

# The workload, in two sender sessions. Session 1: big.bin, tree/ (1,000 files) and same.dat;
# session 2: same.dat again, other content. Sent as "sessN/", so a path P of the k-th session
# that sent P comes from $work/sessk/P.
mkdir -p "$work/sess1" "$work/sess2"
head -c $((48 << 20)) /dev/urandom > "$work/sess1/big.bin"
head -c $((4 << 20)) /dev/urandom > "$work/blob"
for ((i = 0; i < 1000; i++)); do
  d="$work/sess1/tree/d$((i % 10))/e$((i / 10 % 10))"
  [[ -d "$d" ]] || mkdir -p "$d"
  # Sizes 0 to 16 KiB, cut from one random blob: under 4 KiB only through the page cache, above
  # it a 4 KiB-aligned part through O_DIRECT and a buffered tail.
  size=$(((i * 7919) % 16385))
  dd if="$work/blob" of="$d/f$i.bin" bs=$size count=1 skip=$((i % 200)) status=none 2> /dev/null ||
    : > "$d/f$i.bin"
done
head -c 100000 /dev/urandom > "$work/sess1/same.dat"
head -c 100000 /dev/urandom > "$work/sess2/same.dat"
total=1003  # Passed lines expected per run: 1 + 1000 + 1, then 1
# The sender waits this long after each file, so that Passed lines come one at a time and a copy
# falls between two files: unpaced, the receiver finishes the 1,000 small files in well under a
# second, faster than this script reacts, and every copy would be taken after the last one.
eof_delay_ms=2

# The expectation at a copy, from the log as it stood then: "final-path<TAB>source" per file
# logged Passed. A "kept as NAME" line moves the old file's expectation to NAME in its folder.
expected_files() {  # LOG
  awk -v src="$work" '
    / Info: .*: the existing file of that name was kept as / {
      line = $0; sub(/^[^ ]* Info: /, "", line)
      i = index(line, ": the existing file of that name was kept as ")
      kept[substr(line, 1, i - 1)] = substr(line, i + 45)
      next
    }
    / File: .*, Trans: .* Passed$/ {
      path = $0; sub(/^[^ ]* File: /, "", path); sub(/, Trans: .*$/, "", path)
      n = ++seen[path]
      if (path in kept) {
        dir = path; if (!sub(/[^\/]*$/, "", dir)) dir = ""
        if (path in want) want[dir kept[path]] = want[path]
        delete kept[path]
      }
      want[path] = src "/sess" n "/" path
    }
    END { for (p in want) print p "\t" want[p] }' "$1"
}

# True when every thread of PID but io_uring's workers is stopped (state T).
all_stopped() {  # PID
  local t stat comm
  for t in /proc/"$1"/task/*; do
    read -r comm 2> /dev/null < "$t/comm" || continue
    [[ "$comm" == iou-* ]] && continue
    read -r stat 2> /dev/null < "$t/stat" || continue
    stat=${stat##*) }
    [[ "${stat:0:1}" == T ]] || return 1
  done
}

# Stops receiver and sender, keeps the log as it stands and copies the image, then resumes.
snapshot() {  # MODE N
  local t0=$EPOCHREALTIME t1 t2
  kill -STOP "$rx"
  [[ -n "$tx" ]] && kill -STOP "$tx" 2> /dev/null
  for _ in {1..400}; do all_stopped "$rx" && break; sleep 0.002; done
  all_stopped "$rx" || bad "$1: the receiver did not stop for copy $2"
  t1=$EPOCHREALTIME
  cp "$work/$1.log" "$work/$1.copy$2.log"
  cp --sparse=always "$work/$1.img" "$work/$1.copy$2.img"
  t2=$EPOCHREALTIME
  [[ -n "$tx" ]] && kill -CONT "$tx" 2> /dev/null
  kill -CONT "$rx"
  echo "  $1 copy $2: taken at $passed Passed line(s) read; stopping took" \
    "$(since "$t0" 1000 "$t1") ms, copying $(since "$t1" 1000 "$t2") ms"
}

# Mounts each copy of MODE and checks the files its log had called Passed. Sets lost_total.
check_copies() {  # MODE COPIES
  local k rel src n_checked n_lost lost_list dev
  lost_total=0 checked_total=0
  for ((k = 1; k <= $2; k++)); do
    n_checked=0 n_lost=0 lost_list=()
    mount_image "$work/$1.copy$k.img" "$work/check" || {
      bad "$1: copy $k does not mount (journal replay failed?)"
      continue
    }
    while IFS=$'\t' read -r rel src; do
      n_checked=$((n_checked + 1))
      if [[ ! -f "$work/check/out/$rel" ]]; then
        n_lost=$((n_lost + 1))
        lost_list+=("$rel (missing)")
      elif ! cmp -s "$src" "$work/check/out/$rel"; then
        n_lost=$((n_lost + 1))
        lost_list+=("$rel (differs: $(stat -c %s "$work/check/out/$rel") of" \
          "$(stat -c %s "$src") bytes)")
      fi
    done < <(expected_files "$work/$1.copy$k.log")
    echo "  $1 copy $k: $n_checked Passed file(s) checked," \
      "$n_lost lost${lost_list:+: ${lost_list[*]:0:5}}"
    unmount_image "$work/check" "$dev"
    rm -f "$work/$1.copy$k.img"
    checked_total=$((checked_total + n_checked))
    lost_total=$((lost_total + n_lost))
  done
}

# One run: fresh image, receiver with ARGS, two sessions, copies after Passed lines 1, 500 and
# the last. Prints the summary line and checks the mode's expectation.
run_mode() {  # MODE DURABLE(yes/no) ARGS...
  local mode=$1 durable=$2
  shift 2
  local img="$work/$mode.img" log="$work/$mode.log" copies=0 session=1 line deadline t0 rc
  # 192 MB holds the 60 MB of files with room to spare; lazy init off, so that no background
  # zeroing writes to the image while it is copied.
  truncate -s 192M "$img"
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img" ||
    { bad "$mode: mkfs.ext4 failed"; return; }
  mount_image "$img" "$work/mnt" || { bad "$mode: cannot mount the image"; return; }
  local imgdev=$dev
  mkdir "$work/mnt/out"
  p=$(port)
  t0=$EPOCHREALTIME
  : > "$log"
  "$recv_bin" --listen "127.0.0.1:$p" --output "$work/mnt/out" --log-file "$log" \
    --buffer-mb 128 --write-buffers 16 --socket-buffer-mb 64 "$@" > "$work/$mode.out" 2>&1 &
  rx=$! tx=
  pids+=("$rx")
  # tail -f follows the log by inotify, so a line is seen within a millisecond or so of its
  # write. The log must exist first: on a missing file tail falls back to polling once a second.
  # The receiver appends to it.
  exec 3< <(exec tail -n +1 -f "$log" 2> /dev/null)
  local tailer=$!
  pids+=("$tailer")
  passed=0
  deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    if ! read -r -t 1 line <&3; then
      kill -0 "$rx" 2> /dev/null || break
      continue
    fi
    case $line in
      *" Info: receiving on "*)
        "$send_bin" "$work/sess1/" --dest "127.0.0.1:$p" --eof-delay "$eof_delay_ms" \
          > "$work/$mode.tx1" 2>&1 &
        tx=$!
        pids+=("$tx")
        ;;
      *" File: "*", Trans: "*" Passed")
        passed=$((passed + 1))
        if ((passed == 1 || passed == 500 || passed == total)); then
          copies=$((copies + 1))
          snapshot "$mode" "$copies"
        fi
        ((passed == total)) && break
        if ((passed == total - 1)); then
          # Session 1 is through on the receiver: send the same name again, in a new session.
          wait_child "$tx" 30 || bad "$mode: sender 1 failed: $(tail -3 "$work/$mode.tx1")"
          session=2
          "$send_bin" "$work/sess2/" --dest "127.0.0.1:$p" > "$work/$mode.tx2" 2>&1 &
          tx=$!
          pids+=("$tx")
        fi
        ;;
      *FAILED*) bad "$mode: $line" ;;
    esac
  done
  local secs
  secs=$(since "$t0" 1)
  ((passed == total)) ||
    bad "$mode: $passed of $total files Passed within 60 s; receiver: $(tail -3 "$work/$mode.out")"
  [[ -n "$tx" ]] && { wait_child "$tx" 30 || bad "$mode: sender $session failed"; }
  kill -TERM "$rx"
  wait_child "$rx" 15
  rc=$?
  ((rc == 0)) || bad "$mode: the receiver exited with $rc on SIGTERM (124: still running 15 s on)"
  kill "$tailer" 2> /dev/null
  wait_child "$tailer" 5
  exec 3<&-
  unmount_image "$work/mnt" "$imgdev"
  rm -f "$img"
  check_copies "$mode" "$copies"
  echo "SUMMARY powercut mode $mode: copies taken $copies, files checked $checked_total," \
    "files lost $lost_total (transfer ${secs}s)"
  if [[ $durable == yes ]]; then
    ((lost_total == 0)) || bad "$mode: durable mode lost $lost_total Passed file(s) in the copies"
  else
    ((lost_total > 0)) ||
      bad "$mode: rw lost nothing: the imitation did not catch unsynced data, so it proves nothing"
  fi
}

all_modes=(default rwd rws rw)
for mode in ${DDFT_POWERCUT_MODES:-${all_modes[*]}}; do
  case $mode in
    default) run_mode default yes ;;
    rw) run_mode rw no --write-mode rw ;;
    *) run_mode "$mode" yes --write-mode "$mode" ;;
  esac
done

echo "powercut: $failures failure(s)"
((failures == 0))
