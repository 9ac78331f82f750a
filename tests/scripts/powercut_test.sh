#!/usr/bin/env bash
# A power cut under a disk with a volatile write cache: does "Passed" in the receive log mean "on
# disk and still there after the power goes"? Usage: powercut_test.sh DD_FILE_SEND DD_FILE_RECEIVE
#
# The disk. nbdkit's file plugin holds what the disk has made durable (data.raw on /dev/shm); its
# cache filter (cache=writeback) keeps every write in a cache until the client flushes, and only
# then writes it into data.raw. nbdfuse shows the disk as a file and a loop device makes that a
# block device: a flush from ext4 becomes a loop flush, an fsync of the FUSE file, an NBD flush.
# Each run first proves the cache: a write to the disk is missing from data.raw until a flush.
# ext4 goes on it with data=writeback and its journal on a second such disk (jnl.raw), so that it
# adds no flush of the data disk of its own: with the journal on the data disk every commit
# flushes that disk first, and with data=ordered every commit that allocated blocks does, either
# of which makes data written with O_DIRECT durable along with the rename after it, and would
# hide a missing fdatasync. Here file data is durable only after an fdatasync, fsync or syncfs
# (or a journal checkpoint), which is all that POSIX promises.
#
# A cut freezes every writer, copies what the disks hold and lets everything go on. The sender is
# stopped (SIGSTOP), then in one of two orders: disk first (both nbdkits, maybe half way through
# writing back a flush, then the receiver, whose threads blocked on the frozen disk show in /proc
# what they wait for) or receiver first (every thread, io_uring's workers included, ends its
# system call and stops, then the nbdkits). data.raw, jnl.raw and the log are copied; the nbdkits
# go on while the receiver stays stopped and its output folder is read; then receiver and sender
# go on. A file that the log calls Passed had every sync answered by the disk before the freeze,
# so the copy must hold it. Each copy is then loop-mounted (ext4 replays its journal, as after a
# power cut) and checked: every file under a final name is byte-identical to a file sent under
# that name, logged Passed at the cut or not; every file logged Passed at the cut is there (or,
# for same.dat, moved aside to same.1.dat by the next file of that name); with rws every file
# also has the mode and the mtime (to the nanosecond) that the sender sent.
#
# Aimed cuts. At the receiver a file goes through announce (temporary file made), data, end of
# file (all data written, not renamed), flush (fdatasync, fsync or one syncfs for a batch),
# rename, folder sync (an io_uring fsync of its folder), then its Passed line. Announce and data
# are aimed at the large file, from its log line and its pace (1 MiB writes over a second); flush
# at a receiver thread inside fdatasync, fsync or syncfs (/proc/TID/syscall), cut disk first; end
# of file at the same sign, cut receiver first (the batch stops flushed, not renamed); rename and
# folder sync at an io_uring worker waiting on a journal commit (/proc/TID/wchan), cut disk first.
# What a cut hit is read at the cut, not assumed: flush and folder sync from the kernel stacks of
# the threads blocked on the frozen disk; the others from the output folder against the log: a
# temporary file of a file in flight that is empty (announce), partly written (data) or whole
# with the mtime sent, which the commit sets as it begins (eof; a whole one without it may still
# wait for its end, which with two channels can come after the other channel's file), or a final
# name not yet logged Passed (rename). Each stage is hit at least once per durable mode. rw
# never syncs: it has no flush or folder sync, and nothing outside shows its rename (over in
# microseconds), so there only announce and data are required. The targets are drawn at random,
# stages not yet hit first, from a seed printed at the start (DDFT_POWERCUT_SEED=N draws the
# same; the timing differs from run to run). Up to 26 cuts per mode, spread over the files, and
# one after the last Passed line.
#
# The workload, in two sender sessions: one large file (8 MiB, through O_DIRECT), 300 small files
# in nested folders (0 to 16 KiB: page cache, and O_DIRECT for whole 4 KiB blocks) with various
# modes and mtimes, and one name sent twice (--on-collision rename keeps the first as
# same.1.dat). Modes: the default (rwd), rwd and rws must lose nothing; rw (never syncs) must be
# seen to lose at least one file logged Passed, which proves that the cuts can see a loss. A
# receiver built with DDFT_TEST_DROP_SYNC (no flush before the rename) fails here.
#
# Two channels (about half the runs, as the seed draws): the same kinds of files as two channels
# of one class and weight, red and blue (SESSION/red/... and SESSION/blue/..., received as
# red/... and blue/...): each has a large file of 4 MiB, the two sent side by side at half the
# rate each, the pace of the one large file, and every other small file, which go on the wire
# interleaved with the other channel's, so that files of both are in flight at the cuts; same.dat
# and its second sending are red's. The stages are aimed at and read as above, the large files
# counting as one (announced with the first, done with the last), and every check is the same;
# a mode fails unless 2 of its cuts or more found files of both channels in flight.
#
# DDFT_POWERCUT_MODES="rws rw" runs only those modes; DDFT_POWERCUT_CHANNELS=0|1 forces one
# channel or two (else the seed draws it); DDFT_KEEP_WORK=1 keeps the work folder.
# Needs root, loop devices, nbdkit (file plugin, cache filter), nbdfuse and FUSE: otherwise it
# prints SKIPPED and exits 77.
set -uo pipefail
send_bin=$1 recv_bin=$2
here=$(cd "$(dirname "$0")" && pwd)
# The mounts stay private to this test (a mount namespace of its own): no other program can sync
# these file systems one by one (syncfs) or keep them busy, and they go with the test's last
# process whatever happens. Where namespaces are refused it runs without (the skip rules decide).
if [[ -z ${DDFT_POWERCUT_PRIVATE:-} ]] && [[ $(id -u) -eq 0 ]] && unshare --mount true 2> /dev/null
then
  DDFT_POWERCUT_PRIVATE=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
# shellcheck source=fs_test_lib.sh
source "$here/fs_test_lib.sh"
fs_test_init powercut
for tool in nbdkit nbdfuse fusermount3 md5sum find; do
  command -v "$tool" > /dev/null || skip "powercut test needs $tool (scripts/setup.sh installs it)"
done
[[ -c /dev/fuse ]] || skip "powercut test needs FUSE (/dev/fuse)"
# fsync, fdatasync and syncfs: the system calls a flush is aimed at.
case $(uname -m) in
  x86_64) flush_calls=" 74 75 306 " ;;
  aarch64) flush_calls=" 82 83 267 " ;;
  *) skip "powercut test knows no system call numbers for $(uname -m)" ;;
esac
truncate -s 1M "$work/probe.raw"
nbdkit --filter=cache file "$work/probe.raw" --run true 2> /dev/null ||
  skip "powercut test needs nbdkit's file plugin and cache filter"

seed=${DDFT_POWERCUT_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$seed
# One channel or two: drawn from the seed (drawn either way, so that forcing the mode the seed
# drew changes nothing else).
channels=$((RANDOM % 2 + 1))
case ${DDFT_POWERCUT_CHANNELS:-} in
  0) channels=1 ;;
  1) channels=2 ;;
  '') ;;
  *) echo "powercut: DDFT_POWERCUT_CHANNELS is 0 or 1" >&2 && exit 2 ;;
esac
echo "powercut: seed $seed, $channels channel(s) (DDFT_POWERCUT_SEED=$seed" \
  "DDFT_POWERCUT_CHANNELS=$((channels - 1)) repeats the choices)"
# Each channel's folder in a session's folder ("" for the one session folder), and the large
# files, by the path the receiver logs.
if ((channels == 2)); then
  folder_of=(red/ blue/) big_files=(red/big.bin blue/big.bin)
else
  folder_of=("") big_files=(big.bin)
fi
min_cuts=20 max_cuts=26 # per mode, and one more after the last Passed line
min_checked=2000         # files checked per mode, over all its cuts
min_both=2               # with two channels: cuts per mode with files of both in flight
stages=(announce data eof flush rename sync)
declare -A hits  # cuts of the current mode that hit each stage
rate=8       # MB/s: the large file takes a second, its data and announce stages can be aimed at
eof_delay=20 # ms after each file: the small files take 6 s, they come one or two at a time

# ---------------------------------------------------------------------------------------------
# The disks.
nbd_pids=()  # nbdkit servers (stopped at cuts: continued before any cleanup)
fuse_pids=() # their nbdfuse clients
declare -A fuse_pid_of=() # the nbdfuse client of each disk by name (data, jnl)

# fs_test_cleanup, with nbdkit continued first: a stopped disk would hang every unmount.
powercut_cleanup() {
  local p
  # The deadline's sleep first: once the script is gone its id may be another process's.
  [[ -n ${watchdog:-} ]] && { pkill -P "$watchdog" 2> /dev/null; kill "$watchdog" 2> /dev/null; }
  for p in "${nbd_pids[@]}"; do kill -CONT "$p" 2> /dev/null; done
  fs_test_cleanup
  for p in "${fuse_pids[@]}" "${nbd_pids[@]}"; do kill -KILL "$p" 2> /dev/null; done
}
trap powercut_cleanup EXIT
# Bounded below ctest's TIMEOUT (a kill from ctest would leave mounts, loop devices and nbdkits
# behind): past it the script ends itself, failing, through its cleanup.
deadline_s=${DDFT_POWERCUT_DEADLINE_S:-210}
trap 'echo "FAIL the test took longer than $deadline_s s"; exit 1' TERM
# Its streams go nowhere: it must not hold ctest's pipe open once the script has ended.
(sleep "$deadline_s" && kill -TERM $$) > /dev/null 2>&1 &
watchdog=$!

# A disk of SIZE with a write cache, as a loop device: sets dev and nbd (nbdkit's pid).
disk_start() {  # NAME SIZE
  local name=$1
  rm -f "$work/$name.raw" "$work/$name.fuse.pid" "$work/$name.nbdkit.pid"
  truncate -s "$2" "$work/$name.raw"
  mkdir -p "$work/$name.fuse" "$work/cache"
  TMPDIR="$work/cache" nbdfuse -P "$work/$name.fuse.pid" "$work/$name.fuse/disk" \
    [ nbdkit --exit-with-parent -P "$work/$name.nbdkit.pid" --filter=cache \
    file "$work/$name.raw" cache=writeback cache-min-block-size=4096 ] 2>> "$work/nbd.log" &
  fuse_pids+=($!)
  fuse_pid_of[$name]=$!
  fuse_mounts+=("$work/$name.fuse")
  wait_for_file "$work/$name.fuse.pid" 10 && wait_for_file "$work/$name.nbdkit.pid" 10 ||
    { bad "nbdfuse/nbdkit did not start: $(tail -3 "$work/nbd.log")"; return 1; }
  read -r nbd < "$work/$name.nbdkit.pid"
  nbd_pids+=("$nbd")
  attach "$work/$name.fuse/disk" || { bad "losetup on the FUSE file: $dev"; return 1; }
}

# Undoes disk_start for NAME (DEV its loop device, NBD its nbdkit).
disk_stop() {  # NAME DEV NBD
  losetup -d "$2" && forget loops "$2"
  unmount_fuse "$work/$1.fuse"
  wait_child "${fuse_pid_of[$1]}" 10 || bad "nbdfuse of $1 did not end after its unmount"
  forget fuse_pids "${fuse_pid_of[$1]}"
  unset "fuse_pid_of[$1]"
  kill -0 "$3" 2> /dev/null && { kill -CONT "$3"; kill "$3"; }
  forget nbd_pids "$3"
}

# Unmounts DIR, retrying "busy" for 10 s: the receiver's io_uring lets go of its files a moment
# after the process has ended, and a program walking /dev/shm can hold a folder for a moment.
unmount_busy() {  # DIR
  local i
  for i in {1..100}; do
    umount "$1" 2> /dev/null && { forget mounts "$1"; return 0; }
    nap 0.1
  done
  bad "$1 still busy after 10 s: $(umount "$1" 2>&1)"
  umount -l "$1" && forget mounts "$1"
}

# Sets state to the state letters of PID's threads, one a thread.
thread_states() {  # PID
  local t s
  state=
  for t in /proc/"$1"/task/*; do
    read -r s 2> /dev/null < "$t/stat" || continue
    s=${s##*) }
    state+=${s:0:1}
  done
}
# Waits (at most 3 s) until every thread of PID is in one of STATES (letters, e.g. T or TD).
wait_states() {  # PID STATES
  local end=$((SECONDS + 3))
  while :; do
    thread_states "$1"
    [[ -z ${state//[$2]/} ]] && return 0
    ((SECONDS >= end)) && return 1
    nap
  done
}
exec {nap_fd}<> <(:)
nap() { read -r -t "${1:-0.001}" -u "$nap_fd"; }  # a sleep without a fork

# Proves the write cache of the disk DEV (file RAW, server NBD): 64 KiB written straight to the
# disk are missing from RAW until the disk is flushed.
check_write_cache() {  # DEV RAW NBD
  head -c 65536 /dev/urandom > "$work/probe.bin"
  dd if="$work/probe.bin" of="$1" bs=64k seek=100 oflag=direct status=none
  freeze_disk "$3"
  dd if="$2" of="$work/probe.raw" bs=64k skip=100 count=1 status=none
  kill -CONT "$3"
  if cmp -s "$work/probe.bin" "$work/probe.raw"; then
    bad "the disk kept a write that was never flushed: no write cache, the test proves nothing"
    return 1
  fi
  sync "$1"
  freeze_disk "$3"
  dd if="$2" of="$work/probe.raw" bs=64k skip=100 count=1 status=none
  kill -CONT "$3"
  cmp -s "$work/probe.bin" "$work/probe.raw" ||
    { bad "the disk lost a flushed write"; return 1; }
  echo "  write cache: a write is lost until flushed, then kept"
}
freeze_disk() {  # NBD
  kill -STOP "$1"
  wait_states "$1" T || bad "nbdkit $1 did not stop"
}

# ---------------------------------------------------------------------------------------------
# The workload, in two sender sessions: session 1 sends sess1/ (big.bin, same.dat, tree/),
# session 2 sess2/ (same.dat again, other content). A path P sent by the k-th session that sent
# P comes from sessk/P. Modes and mtimes vary (whole seconds and nanoseconds) so that rws can be
# seen to carry them. With two channels, sessN/red/ and sessN/blue/ are the channels' folders
# (received as red/... and blue/...): each has a big.bin of 4 MiB, sent side by side at half the
# rate each (the pace of the one 8 MiB file), and every other small file; same.dat is red's.
make_workload() {
  local i d size modes=(600 640 644 664 755 700 444) big
  mkdir -p "$work/sess1" "$work/sess2"
  head -c $((1 << 20)) /dev/urandom > "$work/blob"
  for big in "${big_files[@]}"; do
    mkdir -p "$(dirname "$work/sess1/$big")"
    head -c $((8 << 20 >> (channels - 1))) /dev/urandom > "$work/sess1/$big"
  done
  for ((i = 0; i < 300; i++)); do
    d="$work/sess1/${folder_of[i % channels]}tree/d$((i % 6))/e$((i / 6 % 5))"
    [[ -d "$d" ]] || mkdir -p "$d"
    # 0 to 16 KiB: under 4 KiB only through the page cache, above it whole 4 KiB blocks through
    # O_DIRECT and a buffered tail.
    size=$(((i * 7919) % 16385))
    tail -c +$((i * 3001 + 1)) "$work/blob" | head -c "$size" > "$d/f$i.bin"
    chmod "${modes[i % 7]}" "$d/f$i.bin"
    touch -d "@$((1600000000 + i * 86413)).$((i * 7654321 % 1000000000))" "$d/f$i.bin"
  done
  mkdir -p "$work/sess2/${folder_of[0]}"
  head -c 100000 /dev/urandom > "$work/sess1/${folder_of[0]}same.dat"
  head -c 100000 /dev/urandom > "$work/sess2/${folder_of[0]}same.dat"
  chmod 640 "$work/sess2/${folder_of[0]}same.dat"
  touch -d @1700000000.123456789 "$work/sess1/${folder_of[0]}same.dat"
  # "path<TAB>sessN<TAB>md5<TAB>mode<TAB>mtime" for each source file.
  (cd "$work" && find sess1 sess2 -type f -print0 | xargs -0 md5sum > md5s &&
    find sess1 sess2 -type f -printf '%p\t%m\t%T@\n' |
    awk -F'\t' 'FNR == NR { h[substr($0, 35)] = substr($0, 1, 32); next }
      { i = index($1, "/"); print substr($1, i + 1) "\t" substr($1, 1, i - 1) "\t" h[$1] "\t" \
        $2 "\t" $3 }' md5s - > sources)
  n_session1=$(find "$work/sess1" -type f | wc -l)
}

# ---------------------------------------------------------------------------------------------
# The running transfer. The log is followed by tail -f on fd 3; drain_log reads what came and
# keeps count (passed, announced), starts session 2 once session 1 is all Passed, and notes
# FAILED lines.
# The first session's console is followed on fd 4 (its Sent lines: how far the sender is).
start_sender() {  # SESSION
  : > "$work/$mode.tx$1"
  if (($1 == 1)); then
    exec 4< <(exec tail -n +1 -f "$work/$mode.tx1" 2> /dev/null)
    tx_tailer=$!
    pids+=("$tx_tailer")
  fi
  # The session's folder; with two channels, each channel's folder the session has, both of
  # one class and weight (their large files go side by side at one pace).
  local what=("$work/sess$1/") f
  if ((channels == 2)); then
    what=()
    for f in "${folder_of[@]}"; do
      [[ -d $work/sess$1/$f ]] && what+=(--channel "${f%/}:source=$work/sess$1/$f,class=0,weight=1")
    done
  fi
  "$send_bin" "${what[@]}" --dest "127.0.0.1:$p" --rate "$rate" --eof-delay "$eof_delay" \
    >> "$work/$mode.tx$1" 2>&1 &
  tx=$!
  pids+=("$tx")
  session=$1
}
drain_log() {
  local line big
  if [[ -n $tx_tailer ]]; then
    while read -r -t 0 -u 4 && IFS= read -r -t 1 -u 4 line; do
      [[ $line == *" Sent: "* ]] && sent=$((sent + 1)) && hold_sender
    done
  fi
  while read -r -t 0 -u 3 && IFS= read -r -t 1 -u 3 line; do
    case $line in
      *" Info: receiving on "*) start_sender 1 ;;
      *" Info: "*", Size: "*" receiving")
        announced=$((announced + 1))
        for big in "${big_files[@]}"; do
          [[ $line == *" Info: $big, Size: "* && $big_state == none ]] &&
            big_state=announced big_at=${EPOCHREALTIME/./}
        done
        ;;
      *" File: "*", Trans: "*" Passed")
        passed=$((passed + 1))
        for big in "${big_files[@]}"; do
          [[ $line == *" File: $big, Trans: "* ]] && big_passed=$((big_passed + 1))
        done
        ((big_passed == ${#big_files[@]})) && big_state=done
        if ((passed == n_session1)); then
          kill -CONT "$tx" 2> /dev/null
          held=0
          wait_child "$tx" 30 || bad "$mode: sender 1 failed: $(tail -3 "$work/$mode.tx1")"
          start_sender 2
        fi
        ;;
      *FAILED* | *" Error: "*) bad "$mode: $line" ;;
    esac
  done
}

# Passed lines come in bursts (a batch is flushed at once, and a flush may take seconds on a busy
# host) while the sender runs on, and the receiver's announce lines wait for the same disk:
# paced by the log alone, the files would outrun the cuts. So the sender is held (SIGSTOP, until
# the next cut) once it has sent the files of two cuts ahead; the cut schedule waits only for
# files before those, which need no more sending.
hold_sender() {
  ((pacing && cuts >= 5 && !held)) || return 0
  ((sent >= (cuts - 2) * n_session1 / (max_cuts - 4))) || return 0
  [[ -n $tx ]] && kill -STOP "$tx" 2> /dev/null && held=1
}

# The receiver's threads, as "TID COMM" lines in tids (refreshed: io_uring's workers come and go).
list_threads() {
  local t c
  tids=()
  for t in /proc/"$rx"/task/*; do
    read -r c 2> /dev/null < "$t/comm" && tids+=("${t##*/} $c")
  done
}
# True while a thread of the receiver is inside fdatasync, fsync or syncfs.
in_flush() {
  local e nr
  for e in "${tids[@]}"; do
    [[ ${e#* } == dd-fsop* ]] || continue
    read -r nr _ 2> /dev/null < "/proc/$rx/task/${e%% *}/syscall"
    [[ $flush_calls == *" $nr "* ]] && return 0
  done
  return 1
}
# True while an io_uring worker waits on a journal commit or a flush: a folder's fsync.
in_folder_sync() {
  local e w
  for e in "${tids[@]}"; do
    [[ ${e#* } == iou-* ]] || continue
    read -r w 2> /dev/null < "/proc/$rx/task/${e%% *}/wchan"
    [[ $w == jbd2_log_wait_commit || $w == submit_bio_wait || $w == *flush* ]] && return 0
  done
  return 1
}

# Waits (at most WAIT_MS) for the sign of STAGE; returns 1 when it did not come.
aim() {  # STAGE WAIT_MS
  local end=$((${EPOCHREALTIME/./} + $2 * 1000)) seen=$announced n=0
  # The first announce comes once the sender has read its file list: wait for it.
  [[ $big_state == none ]] && end=$((end + 10000000))
  local data_at=$((big_at + 100000 + RANDOM % 800 * 1000))
  while ((${EPOCHREALTIME/./} < end)); do
    drain_log
    ((passed >= n_session1 + 1)) && return 1
    if ((n++ % 8 == 0)); then list_threads; fi
    case $1 in
      flush | eof) in_flush && return 0 ;;
      sync | rename) in_folder_sync && return 0 ;;
      announce) ((announced > seen)) && return 0 ;;
      data)
        [[ $big_state == announced ]] && ((${EPOCHREALTIME/./} > data_at)) && return 0
        ;;
    esac
    nap
  done
  return 1
}

# ---------------------------------------------------------------------------------------------
# A cut: what the disks hold at one instant, and what the receiver was doing then.

# Stages seen in the blocked threads of the receiver (the disk is frozen): a thread inside
# fdatasync, fsync or syncfs (flush), an io_uring worker inside a folder's fsync (sync).
blocked_stages() {
  local t c s stack
  for t in /proc/"$rx"/task/*; do
    read -r s 2> /dev/null < "$t/stat" || continue
    s=${s##*) }
    [[ ${s:0:1} == D ]] || continue
    read -r c 2> /dev/null < "$t/comm" || continue
    stack=$(cat "$t/stack" 2> /dev/null)
    if [[ $c == dd-fsop* && ($stack == *ext4_sync_file* || $stack == *sync_filesystem*) ]]; then
      echo flush
    elif [[ $c == iou-* && $stack == *io_fsync* ]]; then
      echo sync
    fi
  done
}

# Stages seen in the output folder (the receiver stopped, the disk still running), against the
# log at the cut (LOG): a temporary file empty (announce), partly written (data), or whole with
# the mtime sent, which its commit sets first (eof), of a file announced and not yet Passed; or
# such a file under its final name (rename). A whole one without that mtime may still wait for
# its end (with two channels, behind the other channel's file and the lane's --eof-delay) or for
# its commit to begin: no stage.
folder_stages() {  # LOG
  find "$out" -path "$out/.ddft" -prune -o -type f -printf '%P\t%s\t%T@\n' |
    awk -F'\t' '
      part == 1 { mtimes[$1] = mtimes[$1] " " $5; next }
      part == 2 {
        if ($0 ~ / Info: .*, Size: [0-9,]+ \(bytes\) \. \. \. receiving$/) {
          line = $0; sub(/^[^ ]* Info: /, "", line)
          i = index(line, ", Size: "); path = substr(line, 1, i - 1)
          size = substr(line, i + 8); sub(/ .*/, "", size); gsub(/,/, "", size)
          announced[path]++; sizes[path] = size
        } else if ($0 ~ / File: .*, Trans: .* Passed$/) {
          path = $0; sub(/^[^ ]* File: /, "", path); sub(/, Trans: .*$/, "", path)
          passed[path]++
        }
        next
      }
      { files[$1] = $2; mtime[$1] = $3 }
      END {
        for (p in announced) {
          if (announced[p] <= passed[p]) continue
          d = p; if (!sub(/\/[^\/]*$/, "", d)) d = ""
          want[d] = want[d] " " sizes[p] " "
          n = split(mtimes[p], ms, " ")
          for (i = 1; i <= n; i++) stamped[d] = stamped[d] " " sizes[p] "@" ms[i] " "
          if ((p in files) && !passed[p]) hit["rename"] = 1
        }
        for (f in files) {
          if (f !~ /(^|\/)\.ddft-[^\/]*\.(part|new)$/) continue
          d = f; if (!sub(/\/[^\/]*$/, "", d)) d = ""
          if (!(d in want)) continue
          if (index(stamped[d], " " files[f] "@" mtime[f] " ")) hit["eof"] = 1
          else if (index(want[d], " " files[f] " ")) continue
          else if (files[f] == 0) hit["announce"] = 1
          else hit["data"] = 1
        }
        for (h in hit) print h
      }' part=1 "$work/sources" part=2 "$1" part=3 -
}

# Cut number N of MODE, freezing the disk or the receiver first (ORDER disk|receiver). Leaves
# MODE.cN.{data,jnl,log} and adds "N ORDER AIMED PASSED MS : STAGES" to MODE.hits: the stage
# aimed at, the Passed lines at the cut, how long the transfer stood still, the stages hit.
cut_now() {  # N ORDER
  local base="$work/$mode.c$1" hit s t0=${EPOCHREALTIME/./}
  [[ -n $tx ]] && kill -STOP "$tx" 2> /dev/null
  if [[ $2 == disk ]]; then
    freeze_disks
    kill -STOP "$rx"
    wait_states "$rx" TD || bad "$mode: cut $1: the receiver did not stop"
    hit=$(blocked_stages)
  else
    kill -STOP "$rx"
    wait_states "$rx" T || bad "$mode: cut $1: the receiver did not stop"
    freeze_disks
  fi
  cp "$log" "$base.log"
  cp --sparse=always "$work/data.raw" "$base.data"
  cp --sparse=always "$work/jnl.raw" "$base.jnl"
  kill -CONT "$nbd_data" "$nbd_jnl"
  # The receiver stays stopped (its threads blocked on the disk finish their system call and
  # stop too) while its output folder is read.
  wait_states "$rx" T || bad "$mode: cut $1: the receiver did not stop"
  hit+=" $(folder_stages "$base.log")"
  kill -CONT "$rx"
  [[ -n $tx ]] && kill -CONT "$tx" 2> /dev/null
  held=0
  hit=$(printf '%s\n' $hit | sort -u)
  for s in $hit; do hits[$s]=$((${hits[$s]:-0} + 1)); done
  echo "$1 $2 $target $(grep -c ' Passed$' "$base.log")" \
    "$(((${EPOCHREALTIME/./} - t0) / 1000)) :" $hit >> "$work/$mode.hits"
}
freeze_disks() {
  kill -STOP "$nbd_data" "$nbd_jnl"
  wait_states "$nbd_data" T && wait_states "$nbd_jnl" T || bad "$mode: nbdkit did not stop"
}

# ---------------------------------------------------------------------------------------------
# Checking a copy.

# What the log LOG promises: "path<TAB>session<TAB>path sent" for each file logged Passed, the
# session being the how-many-th that sent that path. A "kept as NAME" line moves the older
# file's promise to NAME in its folder.
promised() {  # LOG
  awk '
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
      want[path] = "sess" n "\t" path
    }
    END { for (p in want) print p "\t" want[p] }' "$1"
}

# Mounts copy N of MODE (ext4 replays its journal) and checks it against the log copied with
# it. Prints one line; adds to checked_total, lost_total, torn_total and meta_total.
check_copy() {  # N
  local base="$work/$mode.c$1" jdev ddev res checked lost torn meta notes
  local dir="$work/check.$mode.$1"
  attach "$base.jnl" || { bad "$mode: copy $1: losetup: $dev"; return; }
  jdev=$dev
  if ! mount_image "$base.data" "$dir" "journal_path=$jdev"; then
    bad "$mode: copy $1 does not mount (journal replay failed?)"
    [[ -n $dev ]] && losetup -d "$dev" && forget loops "$dev"
    losetup -d "$jdev" && forget loops "$jdev"
    return
  fi
  ddev=$dev
  find "$dir/out" -path "$dir/out/.ddft" -prune -o -type f ! -name '.ddft-*' \
    -printf '%P\t%m\t%T@\n' > "$base.final"
  (cd "$dir/out" && cut -f1 "$base.final" | tr '\n' '\0' | xargs -0 -r md5sum) > "$base.md5"
  promised "$base.log" > "$base.promised"
  unmount_busy "$dir"
  losetup -d "$ddev" && forget loops "$ddev"
  losetup -d "$jdev" && forget loops "$jdev"
  res=$(awk -F'\t' -v rws="$rws" '
    function note(s) { if (++notes <= 4) text = text (text == "" ? "" : "; ") s }
    part == 1 { md5[$2, $1] = $3; mode[$2, $1] = $4; mtime[$2, $1] = $5
                sent[$1] = sent[$1] " " $2; next }
    part == 2 { keptof[$1] = $2; keptas[$2] = $1; next }
    part == 3 { want_sess[$1] = $2; want_rel[$1] = $3; next }
    part == 4 { fmode[$1] = $2; fmtime[$1] = $3; next }
    part == 5 { h = substr($0, 1, 32); p = substr($0, 35); fmd5[p] = h; next }
    END {
      for (q in fmode) {
        checked++
        rel = (q in keptof) ? keptof[q] : q
        n = split(sent[rel], ss, " "); s = ""
        for (i = 1; i <= n; i++) if (md5[ss[i], rel] == fmd5[q]) s = ss[i]
        if (s == "") {
          # A file logged Passed counts as lost, below.
          if (!(q in want_sess)) { torn++; note(q " (not yet Passed) differs from what was sent") }
          continue
        }
        if (fmode[q] != mode[s, rel] || fmtime[q] != mtime[s, rel]) {
          meta++
          if (rws) note(q ": mode " fmode[q] " mtime " fmtime[q] ", sent " mode[s, rel] " " \
                        mtime[s, rel])
        }
      }
      for (q in want_sess) {
        if (!(q in fmode)) checked++
        h = md5[want_sess[q], want_rel[q]]
        if (fmd5[q] == h) continue
        # The next file of that name moves it aside (--on-collision rename) before its own
        # Passed line.
        if ((q in keptas) && fmd5[keptas[q]] == h) continue
        lost++
        note(q " Passed, " ((q in fmode) ? "differs from what was sent" : "missing"))
      }
      printf "%d %d %d %d %s\n", checked, lost, torn, meta, text
    }' part=1 "$work/sources" part=2 "$work/$mode.kept" part=3 "$base.promised" \
    part=4 "$base.final" part=5 "$base.md5")
  read -r checked lost torn meta notes <<< "$res"
  echo "  $mode cut $(hit_line "$1"): $checked file(s) checked, $lost lost, $torn torn," \
    "$meta with another mode or mtime${notes:+ ($notes)}"
  checked_total=$((checked_total + checked)) lost_total=$((lost_total + lost))
  torn_total=$((torn_total + torn)) meta_total=$((meta_total + meta))
  ((checked > checked_max)) && checked_max=$checked
  rm -f "$base.data" "$base.jnl"
}
hit_line() {  # N: "N (ORDER first, aimed at STAGE, P Passed, stopped for MS ms: hit STAGES)"
  local n order aimed np ms st
  read -r n order aimed np ms _ st < <(grep "^$1 " "$work/$mode.hits")
  echo "$n ($order first, aimed at $aimed, $np Passed, stopped for $ms ms${st:+: hit $st})"
}

# ---------------------------------------------------------------------------------------------
# One run.

# Chooses the next cut: target (a stage, or any) and order (disk|receiver). The large file's
# announce and data first; then the stages not yet hit in this run, then any at random.
next_target() {
  local s pool=()
  if [[ $big_state == none ]]; then
    target=announce order=receiver
    return
  fi
  if [[ $big_state == announced ]] && ((data_cuts < 3)); then
    data_cuts=$((data_cuts + 1)) target=data order=receiver
    return
  fi
  for s in announce eof flush rename sync; do
    [[ $durable == no && ($s == flush || $s == sync) ]] && continue
    ((${hits[$s]:-0} > 0)) || pool+=("$s")
  done
  ((${#pool[@]} > 0)) || pool=(eof flush rename sync any any)
  target=${pool[RANDOM % ${#pool[@]}]}
  case $target in
    flush | sync | rename) order=disk ;;
    any) order=receiver && ((RANDOM % 2)) && order=disk ;;
    *) order=receiver ;;
  esac
}

# Undoes what run_mode set up so far (at its end, or after a failure), so that the next mode
# starts clean.
teardown_mode() {
  [[ -n $mnt ]] && mountpoint -q "$mnt" && unmount_busy "$mnt"
  [[ -n ${fuse_pid_of[data]:-} ]] && disk_stop data "$ddev" "$nbd_data"
  [[ -n ${fuse_pid_of[jnl]:-} ]] && disk_stop jnl "$jdev" "$nbd_jnl"
}

# Runs MODE with the receiver's ARGS, cutting as it goes, then checks every copy. DURABLE: yes
# (must lose nothing) or no (must be seen to lose).
run_mode() {  # MODE DURABLE ARGS...
  mode=$1 durable=$2 mnt= nbd_data= nbd_jnl=
  shift 2
  rws=0
  [[ $mode == rws ]] && rws=1
  local t0=$EPOCHREALTIME ddev= jdev= tailer rc k gap wait_ms
  : > "$work/$mode.hits"
  hits=()
  disk_start data 64M || { teardown_mode; return; }
  ddev=$dev nbd_data=$nbd
  disk_start jnl 8M || { teardown_mode; return; }
  jdev=$dev nbd_jnl=$nbd
  check_write_cache "$ddev" "$work/data.raw" "$nbd_data" || { teardown_mode; return; }
  # Inode tables written now (no lazy init in the background), small (4096 inodes, copied at
  # each cut), of 256 bytes (mtimes in nanoseconds).
  mkfs.ext4 -q -F -O journal_dev -b 4096 "$jdev" > /dev/null &&
    mkfs.ext4 -q -F -b 4096 -I 256 -N 4096 -E lazy_itable_init=0 -J "device=$jdev" "$ddev" ||
    { bad "$mode: mkfs.ext4 failed"; teardown_mode; return; }
  mnt=$work/mnt.$mode
  mkdir -p "$mnt"
  mount -t ext4 -o "journal_path=$jdev,data=writeback" "$ddev" "$mnt" ||
    { bad "$mode: mount failed"; mnt=; teardown_mode; return; }
  mounts+=("$mnt")
  out=$mnt/out log=$work/$mode.log
  mkdir "$out"
  sync -f "$mnt"
  : > "$log"
  p=$(port)
  "$recv_bin" --listen "127.0.0.1:$p" --output "$out" --log-file "$log" --buffer-mb 64 \
    --write-buffers 8 --socket-buffer-mb 32 "$@" > "$work/$mode.out" 2>&1 &
  rx=$! tx=
  pids+=("$rx")
  # tail -f follows the log by inotify; the log must exist first (else tail polls once a second).
  exec 3< <(exec tail -n +1 -f "$log" 2> /dev/null)
  tailer=$!
  pids+=("$tailer")
  passed=0 announced=0 big_state=none big_at=0 big_passed=0 session=0 cuts=0 data_cuts=0 held=0
  pacing=1 sent=0 tx_tailer=
  local deadline=$((SECONDS + 60))
  while ((passed < n_session1 + 1 && cuts < max_cuts && SECONDS < deadline)) &&
    kill -0 "$rx" 2> /dev/null; do
    # Spread over the small files: the k-th cut after the large file's waits for its share of
    # Passed lines, then 0 to 10 ms more.
    gap=$((${EPOCHREALTIME/./} + RANDOM % 10000))
    while ((${EPOCHREALTIME/./} < gap || (cuts >= 5 &&
      passed < (cuts - 4) * n_session1 / (max_cuts - 4)))); do
      drain_log
      ((passed >= n_session1 + 1)) && break
      nap 0.002
    done
    next_target
    # Behind the schedule (the next cut's share already Passed, on a slow or busy host), the
    # sender waits until this cut is taken, and a stage already hit is given 20 ms to show:
    # the cuts keep pace with the files.
    wait_ms=100
    if ((cuts >= 5 && passed >= (cuts - 3) * n_session1 / (max_cuts - 4))); then
      kill -STOP "$tx" 2> /dev/null && held=1
      [[ $target == any || ${hits[$target]:-0} -gt 0 ]] && wait_ms=20
    fi
    if [[ $target == any || ($durable == no && $target != announce && $target != data) ]]; then
      # At any moment; and rw, which never syncs, shows no sign of its end of file or rename.
      aim none $((RANDOM % wait_ms))
    else
      aim "$target" "$wait_ms"
    fi
    ((passed >= n_session1 + 1)) && break
    cuts=$((cuts + 1))
    cut_now "$cuts" "$order"
  done
  [[ -n $tx ]] && kill -CONT "$tx" 2> /dev/null
  held=0 pacing=0
  while ((passed < n_session1 + 1 && SECONDS < deadline)) && kill -0 "$rx" 2> /dev/null; do
    drain_log
    nap 0.01
  done
  ((passed == n_session1 + 1)) ||
    bad "$mode: $passed of $((n_session1 + 1)) files Passed within 60 s:" \
      "$(tail -3 "$work/$mode.out")"
  # The last cut: after every file was Passed.
  cuts=$((cuts + 1)) target=end
  cut_now "$cuts" receiver
  [[ -n "$tx" ]] && { wait_child "$tx" 30 || bad "$mode: sender $session failed"; }
  kill -TERM "$rx"
  wait_child "$rx" 15
  rc=$?
  ((rc == 0)) || bad "$mode: the receiver exited with $rc on SIGTERM (124: still running 15 s on)"
  kill "$tailer" ${tx_tailer:+"$tx_tailer"} 2> /dev/null
  wait_child "$tailer" 5
  [[ -n $tx_tailer ]] && wait_child "$tx_tailer" 5
  exec 3<&- 4<&-
  local secs_run
  secs_run=$(since "$t0" 1)
  teardown_mode
  # Each kept name (same.1.dat), with the path it was kept from.
  awk '/ Info: .*: the existing file of that name was kept as / {
      line = $0; sub(/^[^ ]* Info: /, "", line)
      i = index(line, ": the existing file of that name was kept as ")
      path = substr(line, 1, i - 1); dir = path; if (!sub(/[^\/]*$/, "", dir)) dir = ""
      print dir substr(line, i + 45) "\t" path
    }' "$log" > "$work/$mode.kept"
  checked_total=0 lost_total=0 torn_total=0 meta_total=0 checked_max=0
  for ((k = 1; k <= cuts; k++)); do check_copy "$k"; done
  judge_mode "$secs_run" "$(since "$t0" 1)"
}

# With two channels: how many cuts of the mode found files of both channels in flight, announced
# and not yet Passed in the log copied at the cut.
cuts_with_both() {
  awk '
    function tally(p, c, seen, k) {
      for (p in open) {
        if (open[p] <= 0) continue
        c = p; sub(/\/.*/, "", c)
        if (!(c in seen)) { seen[c] = 1; k++ }
      }
      if (k > 1) both++
      split("", open)
    }
    FNR == 1 && NR > 1 { tally() }
    / Info: .*, Size: [0-9,]+ \(bytes\) \. \. \. receiving$/ {
      p = $0; sub(/^[^ ]* Info: /, "", p); sub(/, Size: [0-9,]+ \(bytes\) .*$/, "", p); open[p]++
    }
    / File: .*, Trans: .* Passed$/ {
      p = $0; sub(/^[^ ]* File: /, "", p); sub(/, Trans: .*$/, "", p); open[p]--
    }
    END { tally(); print both + 0 }' "$work/$mode".c*.log
}

# The summary line of a mode and its assertions.
judge_mode() {  # SECONDS_RUN SECONDS_ALL
  local s n counts="" missing=() disk_first both=
  for s in "${stages[@]}"; do
    n=${hits[$s]:-0}
    counts+="$s $n, "
    ((n > 0)) && continue
    [[ $durable == no && $s != announce && $s != data ]] && continue
    missing+=("$s")
  done
  disk_first=$(grep -c '^[0-9]* disk ' "$work/$mode.hits")
  if ((channels == 2)); then
    both=$(cuts_with_both)
    ((both >= min_both)) ||
      bad "$mode: $both cut(s) found files of both channels in flight, fewer than $min_both"
    both=", $both with files of both channels in flight"
  fi
  echo "SUMMARY powercut mode $mode: cuts $cuts ($disk_first disk first$both)," \
    "stages hit: ${counts%, };" \
    "files checked $checked_total (all $checked_max at the last cut), lost $lost_total," \
    "torn $torn_total, other mode or mtime $meta_total; run ${1}s, with checks ${2}s"
  ((cuts >= min_cuts + 1)) || bad "$mode: $cuts cuts, fewer than $((min_cuts + 1))"
  ((${#missing[@]} == 0)) || bad "$mode: no cut hit ${missing[*]}"
  ((checked_total >= min_checked)) ||
    bad "$mode: $checked_total files checked over all cuts, fewer than $min_checked"
  ((checked_max == n_session1 + 1)) ||
    bad "$mode: the last cut checked $checked_max files, not all $((n_session1 + 1))"
  if [[ $durable == yes ]]; then
    ((lost_total == 0)) || bad "$mode: durable mode lost $lost_total file(s) logged Passed"
    ((torn_total == 0)) ||
      bad "$mode: $torn_total file(s) under a final name differ from what was sent"
    ((rws == 0 || meta_total == 0)) ||
      bad "$mode: $meta_total file(s) without the mode or mtime the sender sent"
  else
    ((lost_total > 0)) ||
      bad "$mode: rw lost nothing: the cuts did not catch unsynced data, so they prove nothing"
  fi
}

make_workload
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
