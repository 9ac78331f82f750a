#!/usr/bin/env bash
# The output file system fails under a running receiver daemon, for real (real ext4 on loop
# devices, real errors from the kernel). Usage: fs_faults_test.sh DD_FILE_SEND DD_FILE_RECEIVE
#
#   a. disk full mid-file: another writer fills the file system after the file was announced;
#   b. I/O errors: every write to the disk fails with EIO for a while (data writes and the
#      writeback that a sync waits for), then the disk works again;
#   c1. an operator remounts the file system read-only while files arrive, later read-write;
#   c2. the kernel turns the file system read-only under a file in flight (an ext4 error with
#      errors=remount-ro), which only an unmount undoes.
# Expected in each: the file in flight fails with a one-line `Error: NAME FAILED: reason` and a
# record in OUTPUT/.ddft/failed when one can be written (else the line says the record was not
# written); nothing partial appears under a final name; the daemon keeps draining its ring (no
# ring-full drops) and keeps logging, and fails every later file clearly while the fault lasts;
# once the fault is gone it delivers files again, without a restart.
#
# DDFT_WRITE_MODE=rwd|rws|rw runs the receiver with that --write-mode (default: none given).
# Needs root and loop devices (else SKIPPED, 77); part b needs nbdkit, nbdfuse and FUSE
# (scripts/setup.sh installs them); part c2 needs ext4's trigger_fs_error in sysfs.
set -uo pipefail
send_bin=$1 recv_bin=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=fs_test_lib.sh
source "$here/fs_test_lib.sh"
fs_test_init fs_faults
mode_args=()
[[ -n "${DDFT_WRITE_MODE:-}" ]] && mode_args=(--write-mode "$DDFT_WRITE_MODE")

mkdir -p "$work/src"
src() {  # NAME SIZE: a source file of random bytes
  head -c "$2" /dev/urandom > "$work/src/$1"
}

# A receiver daemon on OUT, logging to LOG (outside the file system under test). Sets rx, p.
start_rx() {  # OUT LOG [ARGS...]
  local out=$1 log=$2
  shift 2
  p=$(port)
  : > "$log"
  "$recv_bin" --listen "127.0.0.1:$p" --output "$out" --log-file "$log" --buffer-mb 64 \
    --write-buffers 8 --socket-buffer-mb 32 "${mode_args[@]}" "$@" > "$log.console" 2>&1 &
  rx=$!
  pids+=("$rx")
  wait_for "$log" "Info: receiving on" 5 || bad "receiver did not start: $(cat "$log.console")"
}
# Stops the daemon: SIGTERM must end it with status 0, whatever happened to its disk.
stop_rx() {  # SCENARIO
  local rc
  if ! kill -0 "$rx" 2> /dev/null; then
    bad "$1: the receiver died during the fault"
    wait_child "$rx" 1
  else
    kill -TERM "$rx"
    wait_child "$rx" 15
    rc=$?
    ((rc == 0)) && ok || bad "$1: receiver exit status $rc on SIGTERM (124: still running 15 s on)"
  fi
  forget pids "$rx"
}
# One sender session with FILES (names under src/), in the foreground. Extra options first.
send() {  # [OPTIONS...] -- FILES...
  local opts=() files=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  for f in "$@"; do files+=("$work/src/$f"); done
  "$send_bin" "${files[@]}" --dest "127.0.0.1:$p" "${opts[@]}" >> "$work/send.log" 2>&1
}
send_bg() {  # like send, in the background; sets tx
  send "$@" &
  tx=$!
  pids+=("$tx")
}
# Waits up to SECONDS for a line of LOG holding TEXT (fixed string).
wait_for() {  # LOG TEXT SECONDS
  local end=$((SECONDS + $3))
  until grep -q -F -- "$2" "$1" 2> /dev/null; do
    ((SECONDS >= end)) && return 1
    sleep 0.02
  done
}
# The Error line of NAME: "NAME FAILED: ..." (failed in flight) or "refused file "NAME"" (at its
# announce).
error_line() {  # LOG NAME
  grep -F -e "Error: $2 FAILED: " -e "Error: refused file \"$2\": " "$1"
}
# Waits until NAME has either its Passed line or its Error line.
wait_outcome() {  # LOG NAME SECONDS
  local end=$((SECONDS + $3))
  until grep -q -F "File: $2, " "$1" || error_line "$1" "$2" > /dev/null; do
    ((SECONDS >= end)) && return 1
    sleep 0.02
  done
}
# NAME failed clearly: one Error line naming it, with a reason (REASON_RE, extended regex), and a
# record in the failed folder, or a line saying it could not be written.
expect_failed() {  # SCENARIO LOG OUT NAME REASON_RE
  local lines
  if ! wait_outcome "$2" "$4" 10; then
    bad "$1: $4: neither Passed nor an Error line within 10 s"
    return
  fi
  lines=$(error_line "$2" "$4")
  if [[ -z "$lines" ]]; then
    bad "$1: $4 did not fail while the fault lasted: $(grep -F "File: $4, " "$2")"
    return
  fi
  (($(wc -l <<< "$lines") == 1)) && ok || bad "$1: $4: more than one Error line: $lines"
  grep -q -E -- "$5" <<< "$lines" && ok || bad "$1: $4: reason not /$5/: $lines"
  if grep -q -E "record: (could not be written|not written)" <<< "$lines"; then
    echo "  $1: $4: no record (the line says so): $lines"
  elif compgen -G "$3/.ddft/failed/*-$4.json" > /dev/null; then
    ok
  else
    bad "$1: $4: the line names a record, but there is none in $3/.ddft/failed: $lines"
  fi
}
# True when FILE holds the same bytes as SOURCE on the disk, not only in the page cache: clean
# cached pages are dropped first (POSIX_FADV_DONTNEED), so that data whose writeback failed, and
# which the cache still shows, is read from the disk. Dirty pages stay (they are still to be
# written), which is right for a disk that works.
same_on_disk() {  # SOURCE FILE
  dd if="$2" iflag=nocache count=0 status=none 2> /dev/null
  cmp -s "$1" "$2"
}
# NAME was delivered: Passed in the log and byte-identical under its final name.
expect_passed() {  # SCENARIO LOG OUT NAME
  if ! wait_outcome "$2" "$4" 10; then
    bad "$1: $4: neither Passed nor an Error line within 10 s"
    return
  fi
  grep -q -E "File: $4, .* Passed$" "$2" && ok ||
    bad "$1: $4 not delivered after the fault: $(error_line "$2" "$4")"
  same_on_disk "$work/src/$4" "$3/$4" && ok ||
    bad "$1: $4 differs or is missing under its final name"
}
# What every scenario must show: the daemon alive and logging, no ring drops, nothing partial
# under a final name, no temporary file left behind once the fault is gone ("temp-allowed" while
# the file system is still read-only: it cannot be moved then).
expect_sound() {  # SCENARIO LOG OUT [temp-allowed]
  kill -0 "$rx" 2> /dev/null && ok || bad "$1: the receiver is not running"
  local drops="receive buffer was full|the kernel dropped|lost on the link"
  if grep -q -E "$drops" "$2"; then
    bad "$1: packets dropped during the fault: $(grep -E "$drops" "$2" | head -3)"
  else
    ok
  fi
  local f rel partial=0
  while IFS= read -r -d '' f; do
    rel=${f#"$3"/}
    if [[ $rel == */.ddft-*.part || $rel == .ddft-*.part ]]; then
      [[ ${4:-} == temp-allowed ]] || bad "$1: temporary file left: $rel"
    elif ! same_on_disk "$work/src/$rel" "$f"; then
      partial=1
      bad "$1: $rel under a final name differs from what was sent ($(stat -c %s "$f") bytes)"
    fi
  done < <(find "$3" -path "$3/.ddft" -prune -o -type f -print0)
  ((partial == 0)) && ok
}
# Another writer takes every free block of the file system at DIR: whole MiB first, then 4 KiB
# blocks into a second file for the rest (the first one stops with up to a MiB unused).
fill() {  # DIR NAME
  local t0=$EPOCHREALTIME
  dd if=/dev/zero of="$1/$2" bs=1M status=none 2> /dev/null
  dd if=/dev/zero of="$1/$2.tail" bs=4k status=none 2> /dev/null
  echo "  fill: $(stat -f -c "%a blocks of %S bytes" "$1") left free, $(since "$t0" 1) s"
}
# A fresh ext4 image of SIZE on /dev/shm, mounted on DIR with OPTIONS; sets dev.
new_fs() {  # NAME SIZE DIR [MOUNT_OPTIONS]
  truncate -s "$2" "$work/$1.img"
  mkfs.ext4 -q -F -m 0 -b 4096 "$work/$1.img" || return 1
  mount_image "$work/$1.img" "$3" "${4:-defaults}"
}

# ---------------------------------------------------------------------------------------------
# a. Disk full mid-file. a1 is announced on a 96 MB file system with room for it; then another
# writer takes every free block. a1 fails at its next write; its partial data is removed (the
# receiver does that on ENOSPC), which frees room, so the other writer fills that too. a2 and a3
# must fail while the disk is full; after the filler is deleted, a4 and a5 arrive.
scenario_a() {
  echo "a. disk full mid-file"
  local out="$work/a/out" log="$work/a.log"
  new_fs a 96M "$work/a" || { bad "a: cannot make the file system"; return; }
  local adev=$dev
  mkdir "$out"
  src a1.bin $((16 << 20))
  src a2.bin $((2 << 20))
  src a3.bin 3000
  src a4.bin $((5 << 20))
  src a5.bin 10000
  start_rx "$out" "$log"
  send_bg --rate 4 -- a1.bin  # 4 s
  wait_for "$log" "a1.bin, Size:" 5 || bad "a: a1.bin was not announced"
  sleep 0.5
  fill "$work/a" filler
  wait_outcome "$log" a1.bin 10
  fill "$work/a" filler2
  wait_child "$tx" 30 || bad "sender: $(tail -2 "$work/send.log")"
  send -- a2.bin a3.bin
  expect_failed a "$log" "$out" a1.bin "No space left on device"
  expect_failed a "$log" "$out" a2.bin "No space left on device|not enough free space"
  expect_failed a "$log" "$out" a3.bin "No space left on device|not enough free space"
  rm -f "$work/a"/filler*
  send -- a4.bin a5.bin
  expect_passed a "$log" "$out" a4.bin
  expect_passed a "$log" "$out" a5.bin
  expect_sound a "$log" "$out"
  stop_rx a
  unmount_image "$work/a" "$adev"
  echo "  a: log: $(grep -c . "$log") lines; errors: $(grep -c "Error:" "$log")"
}

# ---------------------------------------------------------------------------------------------
# b. I/O errors. The disk is a RAM disk served by nbdkit, whose error filter fails every write
# with EIO while a flag file exists; nbdfuse shows it as a file, which a loop device turns into a
# block device for ext4. Why not an image on a small tmpfs, as first planned: a loop device over
# a full tmpfs reports BLK_STS_NOSPC, so ext4 and the receiver see ENOSPC on data writes (a
# disk-full case, a. already), and only the writeback of metadata reports EIO (at syncfs).
# ext4's journal lives on a second, healthy loop device (an external journal): a failed journal
# write aborts the journal and leaves the file system read-only until it is unmounted, whatever
# errors= says (checked: errors=continue, then remount,rw is refused). Failed data writes do not
# touch the journal: ext4 returns them to the writer (O_DIRECT) or to its fsync (writeback), logs
# them and stays read-write, so errors= does not matter here (checked with errors=remount-ro).
# b1 is in flight when the errors start; b2 (2 MiB: O_DIRECT blocks) and b3 (3000 bytes: page
# cache only, so only a sync can see its error) are sent during the fault; b4 and b5 after it.
scenario_b() {
  echo "b. I/O errors (EIO) on writes and syncs"
  local out="$work/b/out" log="$work/b.log" flag="$work/b-eio-on" tool
  for tool in nbdkit nbdfuse fusermount3; do
    command -v "$tool" > /dev/null || {
      bad "b: $tool is missing (scripts/setup.sh installs nbdkit, libnbd-bin and fuse3)"
      return
    }
  done
  mkdir -p "$work/bfuse"
  nbdfuse -P "$work/bfuse.pid" "$work/bfuse/disk" [ nbdkit --exit-with-parent --filter=error \
    memory 192M error=EIO error-pwrite-rate=100% "error-pwrite-file=$flag" \
    error-zero-rate=100% "error-zero-file=$flag" ] 2>> "$work/nbd.log" &
  local fuse_pid=$!
  pids+=("$fuse_pid")
  fuse_mounts+=("$work/bfuse")
  if ! wait_for_file "$work/bfuse.pid" 5; then
    bad "b: nbdfuse did not start: $(cat "$work/nbd.log")"
    return
  fi
  truncate -s 16M "$work/bjournal.img"
  mkfs.ext4 -q -F -O journal_dev -b 4096 "$work/bjournal.img" > /dev/null
  attach "$work/bjournal.img" || { bad "b: losetup: $dev"; return; }
  local jdev=$dev
  attach "$work/bfuse/disk" || { bad "b: losetup on the FUSE file: $dev"; return; }
  local ddev=$dev
  # Inode tables zeroed now: ext4lazyinit would otherwise write them in the background, and a
  # failed metadata write is a file-system error (the journal aborts: read-only until unmounted).
  mkfs.ext4 -q -F -m 0 -b 4096 -E lazy_itable_init=0 -J "device=$jdev" "$ddev" ||
    { bad "b: mkfs failed"; return; }
  mkdir -p "$work/b"
  mount -t ext4 "$ddev" "$work/b" || { bad "b: mount failed"; return; }
  mounts+=("$work/b")
  # ext4 rewrites its superblock after every 16 MB written (sb_update_kb); one failing in the
  # fault would, again, be a metadata error. Not within this test's few MB.
  local tunable="/sys/fs/ext4/${ddev#/dev/}/sb_update_kb"
  [[ -w "$tunable" ]] && echo 1073741824 > "$tunable"
  mkdir "$out"
  src b1.bin $((16 << 20))
  src b2.bin $((2 << 20))
  src b3.bin 3000
  src b4.bin $((5 << 20))
  src b5.bin 10000
  start_rx "$out" "$log"
  send_bg --rate 4 -- b1.bin
  wait_for "$log" "b1.bin, Size:" 5 || bad "b: b1.bin was not announced"
  sleep 0.5
  touch "$flag"
  wait_outcome "$log" b1.bin 10
  wait_child "$tx" 30 || bad "sender: $(tail -2 "$work/send.log")"
  send -- b2.bin b3.bin
  expect_failed b "$log" "$out" b1.bin "Input/output error"
  expect_failed b "$log" "$out" b2.bin "Input/output error"
  expect_failed b "$log" "$out" b3.bin "Input/output error"
  rm -f "$flag"
  send -- b4.bin b5.bin
  expect_passed b "$log" "$out" b4.bin
  expect_passed b "$log" "$out" b5.bin
  expect_sound b "$log" "$out"
  stop_rx b
  echo "  b: $(grep -c "injecting EIO" "$work/nbd.log") write(s) failed with EIO on the disk"
  umount "$work/b" && forget mounts "$work/b"
  losetup -d "$ddev" && forget loops "$ddev"
  losetup -d "$jdev" && forget loops "$jdev"
  unmount_fuse "$work/bfuse"
  wait_child "$fuse_pid" 5 || bad "b: nbdfuse did not end after its unmount"
}

# ---------------------------------------------------------------------------------------------
# c1. An operator remounts the output file system read-only while files arrive. The kernel
# refuses (EBUSY) while any file is open for writing, so the remount can only land between two
# files: the sender pauses 150 ms after each 256 KiB file and the remount is retried until it
# lands. The files announced while it is read-only must fail clearly (their record cannot be
# written there), and once it is read-write again the rest arrive.
scenario_c1() {
  echo "c1. remount,ro while files arrive, then remount,rw"
  local out="$work/c1/out" log="$work/c1.log" i names=() tries=0 ro_at rw_at
  new_fs c1 128M "$work/c1" || { bad "c1: cannot make the file system"; return; }
  local cdev=$dev
  mkdir "$out"
  for ((i = 10; i < 40; i++)); do
    src "c$i.bin" $((256 << 10))
    names+=("c$i.bin")
  done
  start_rx "$out" "$log"
  send_bg --rate 50 --eof-delay 150 -- "${names[@]}"  # about 6 s
  wait_for "$log" "File: c10.bin," 5 || bad "c1: c10.bin did not arrive"
  until mount -o remount,ro "$work/c1" 2> /dev/null; do
    tries=$((tries + 1))
    ((tries > 200)) && break
    sleep 0.01
  done
  if ((tries > 200)); then
    bad "c1: remount,ro never succeeded (busy each time)"
  else
    ro_at=$(grep -c . "$log")
    sleep 1.2
    mount -o remount,rw "$work/c1" || bad "c1: remount,rw failed"
    rw_at=$(grep -c . "$log")
    echo "  c1: read-only after $tries busy attempt(s), for 1.2 s (log lines $ro_at-$rw_at)"
  fi
  wait_child "$tx" 30 || bad "sender: $(tail -2 "$work/send.log")"
  local failed=() passed_after=0 n
  for n in "${names[@]}"; do
    wait_outcome "$log" "$n" 10 || { bad "c1: $n: no outcome within 10 s"; continue; }
    if error_line "$log" "$n" > /dev/null; then
      failed+=("$n")
      expect_failed c1 "$log" "$out" "$n" "Read-only file system"
    else
      expect_passed c1 "$log" "$out" "$n"
      # Its Passed line comes after the remount,rw.
      (($(grep -n -F "File: $n, " "$log" | cut -d: -f1) > ${rw_at:-0})) &&
        passed_after=$((passed_after + 1))
    fi
  done
  ((${#failed[@]} > 0)) && ok || bad "c1: no file failed while the file system was read-only"
  ((passed_after > 0)) && ok || bad "c1: no file delivered after remount,rw"
  # Is any record written later, once the folder is writable again? Either way is right (the
  # lines said "not written"); waited for up to 3 s and reported.
  local late=0 end=$((SECONDS + 3))
  while :; do
    late=0
    for n in "${failed[@]}"; do
      compgen -G "$out/.ddft/failed/*-$n.json" > /dev/null && late=$((late + 1))
    done
    ((late == ${#failed[@]} || SECONDS >= end)) && break
    sleep 0.1
  done
  echo "  c1: ${#failed[@]} file(s) failed while read-only (${failed[*]}); $late of them have a" \
    "record after remount,rw; $passed_after delivered after it"
  expect_sound c1 "$log" "$out"
  stop_rx c1
  unmount_image "$work/c1" "$cdev"
}

# ---------------------------------------------------------------------------------------------
# c2. The kernel turns the file system read-only under a file in flight, as ext4 does on an
# error with errors=remount-ro (sysfs trigger_fs_error raises one). It stays read-only until it
# is unmounted (remount,rw is refused after an error: checked), and the receiver's open folders
# keep it mounted, so recovery takes a restart: d1 in flight fails, d2 and d3 fail clearly, the
# daemon lives on; then it is stopped, the file system mounted again, and a new receiver moves
# d1's temporary file (it could not be moved on a read-only disk) to the failed folder and
# delivers d4.
scenario_c2() {
  echo "c2. the kernel turns the file system read-only under a file in flight"
  local out="$work/c2/out" log="$work/c2.log"
  new_fs c2 96M "$work/c2" errors=remount-ro || { bad "c2: cannot make the file system"; return; }
  local cdev=$dev trigger="/sys/fs/ext4/${dev#/dev/}/trigger_fs_error"
  if [[ ! -w "$trigger" ]]; then
    echo "SKIPPED part c2: this kernel has no $trigger"
    unmount_image "$work/c2" "$cdev"
    return
  fi
  mkdir "$out"
  # Committed now: the error aborts the journal, and what it held would be lost with it.
  sync -f "$work/c2"
  src d1.bin $((16 << 20))
  src d2.bin $((2 << 20))
  src d3.bin 3000
  src d4.bin $((1 << 20))
  start_rx "$out" "$log"
  send_bg --rate 4 -- d1.bin
  wait_for "$log" "d1.bin, Size:" 5 || bad "c2: d1.bin was not announced"
  sleep 0.5
  # d1's temporary file committed too, so that it is found again after the restart (else it
  # is there or not depending on when ext4 last committed).
  sync -f "$work/c2"
  echo "ddft fs_faults test: turn read-only" > "$trigger"
  touch "$work/c2/probe" 2> /dev/null && bad "c2: still writable after the error" || ok
  wait_outcome "$log" d1.bin 10
  wait_child "$tx" 30 || bad "sender: $(tail -2 "$work/send.log")"
  send -- d2.bin d3.bin
  expect_failed c2 "$log" "$out" d1.bin "Read-only file system|Input/output error"
  expect_failed c2 "$log" "$out" d2.bin "Read-only file system"
  expect_failed c2 "$log" "$out" d3.bin "Read-only file system"
  expect_sound c2 "$log" "$out" temp-allowed
  mount -o remount,rw "$work/c2" 2> /dev/null && echo "  c2: remount,rw worked after the error"
  stop_rx c2
  # Recovery as an operator does it: unmount, e2fsck (ext4 asks for it after an error), mount
  # again, restart. What the aborted journal had not committed is gone, as after a crash.
  umount "$work/c2" || { bad "c2: cannot unmount after the error"; return; }
  forget mounts "$work/c2"
  e2fsck -fy "$cdev" > "$work/c2.fsck" 2>&1
  (($? <= 1)) || echo "  c2: e2fsck: $(tail -2 "$work/c2.fsck")"
  mount -t ext4 "$cdev" "$work/c2" || { bad "c2: cannot mount again after the error"; return; }
  mounts+=("$work/c2")
  if ! touch "$work/c2/probe" 2> /dev/null; then
    # A file system the kernel keeps read-only after the error is the kernel's doing, not the
    # receiver's: noted, not failed.
    echo "  c2: NOTE: the file system came back read-only; restart not checked"
    unmount_image "$work/c2" "$cdev"
    return
  fi
  rm -f "$work/c2/probe"
  local temps
  temps=$(find "$out" -path "$out/.ddft" -prune -o -name '.ddft-*.part' -print | wc -l)
  echo "  c2: after mounting again, $temps temporary file(s) left by the receiver"
  start_rx "$out" "$log.2"
  if ((temps > 0)); then
    # Named by its temporary name or by d1.bin, on an Error or Warn line.
    grep -q -E "(Error|Warn): .*(d1\.bin|\.ddft-[0-9a-f]+-[0-9]+\.part)" "$log.2" && ok ||
      bad "c2: the restarted receiver did not report the temporary file left"
  fi
  send -- d4.bin
  expect_passed c2 "$log.2" "$out" d4.bin
  expect_sound c2 "$log.2" "$out"
  stop_rx c2
  unmount_image "$work/c2" "$cdev"
}

parts=(a b c1 c2)
for part in ${DDFT_FS_FAULTS_PARTS:-${parts[*]}}; do
  t0=$EPOCHREALTIME
  "scenario_$part"
  echo "  $part: $(since "$t0" 1) s"
done

echo "fs_faults: $pass passed, $failures failed"
((failures == 0))
