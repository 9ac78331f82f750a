#!/usr/bin/env bash
# Faults on the receive side, for real: a disk stall against a big and a small receive buffer, a
# full disk (small tmpfs: refused at announce, filling mid-file), and temporary files left by an
# earlier run. Usage: faults_test.sh DD_FILE_SEND DD_FILE_RECEIVE
set -uo pipefail
send_bin=$1 recv_bin=$2
work=$(mktemp -d)
rx=
cleanup() {
  [[ -n "$rx" ]] && kill "$rx" 2>/dev/null
  mountpoint -q "$work/small" 2>/dev/null && umount "$work/small"
  rm -rf "$work"
}
trap cleanup EXIT
pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
has() { grep -q -- "$2" "$1" && ok || bad "$3: no '$2' in $1"; }
port() { echo $((20000 + RANDOM % 30000)); }

# Starts a receiver for one session; waits for its start line.
start_rx() {  # OUT LOG ARGS...
  local out=$1 log=$2
  shift 2
  "$recv_bin" --listen "127.0.0.1:$p" --output "$out" --once "$@" > "$log" 2>&1 &
  rx=$!
  for _ in $(seq 100); do grep -q "receiving on" "$log" 2>/dev/null && return; sleep 0.05; done
  bad "receiver did not start: $(cat "$log")"
}
wait_rx() { wait "$rx"; local rc=$?; rx=; return $rc; }

mkdir -p "$work/src"
head -c $((40 << 20)) /dev/urandom > "$work/src/a.bin"
head -c 100000 /dev/urandom > "$work/src/b.bin"

# 1. The disk stalls 2 s after 4 MiB while data arrives at 15 MB/s: 30 MB must wait in RAM.
#    (a.bin then b.bin into out$1, the log in rx$1.log; returns the receiver's exit status.)
stalled_transfer() {  # N BUFFER_MB WRITE_BUFFERS
  p=$(port)
  mkdir -p "$work/out$1"
  start_rx "$work/out$1" "$work/rx$1.log" --buffer-mb "$2" --write-buffers "$3" \
    --socket-buffer-mb 1 --test-stall-writer-s 2 --test-stall-after-mb 4
  "$send_bin" "$work/src/a.bin" "$work/src/b.bin" --dest "127.0.0.1:$p" --rate 15 \
    > "$work/tx$1.log" 2>&1
  wait_rx
}
#    A 96 MB buffer (64 MB ring after the 32 MB write pool) loses nothing.
stalled_transfer 1 96 32
[[ $? -eq 0 ]] && ok || bad "stall, big ring: receiver exit"
cmp -s "$work/src/a.bin" "$work/out1/a.bin" && ok || bad "stall, big ring: a.bin differs"
grep -q "dropped" "$work/rx1.log" && bad "stall, big ring: drops: $(grep dropped "$work/rx1.log")" || ok

#    A 16 MB buffer (12 MB ring) overflows: a.bin fails cleanly with its drops named, b.bin after it
#    arrives whole.
stalled_transfer 2 16 4
[[ $? -eq 1 ]] && ok || bad "stall, small ring: receiver exit (want 1: a file failed)"
[[ ! -e "$work/out2/a.bin" ]] && ok || bad "stall, small ring: a.bin delivered"
cmp -s "$work/src/b.bin" "$work/out2/b.bin" && ok || bad "stall, small ring: b.bin not delivered"
has "$work/rx2.log" "a.bin: [0-9]* packet(s) dropped, the receive buffer was full" "stall, small ring"
has "$work/rx2.log" "a.bin FAILED: .*because the receive buffer was full" "stall, small ring"
ls "$work/out2/.ddft/failed/"*a.bin.json > /dev/null 2>&1 && ok || bad "stall, small ring: no record"

# 2. A full disk, on a 16 MB tmpfs (root only).
if [[ $(id -u) -eq 0 ]] && mkdir -p "$work/small" && mount -t tmpfs -o size=16m tmpfs "$work/small"; then
  mkdir -p "$work/small/out"
  head -c $((10 << 20)) /dev/urandom > "$work/src/ten.bin"
  head -c $((9 << 20)) /dev/urandom > "$work/src/nine.bin"
  head -c 3000 /dev/urandom > "$work/src/tiny.bin"
  # ten.bin fits; then nine.bin does not (6 MB left): refused at announce; tiny.bin still arrives.
  p=$(port)
  start_rx "$work/small/out" "$work/rx3.log" --buffer-mb 64 --write-buffers 8
  "$send_bin" "$work/src/ten.bin" "$work/src/nine.bin" "$work/src/tiny.bin" --dest "127.0.0.1:$p" \
    > "$work/tx3.log" 2>&1
  wait_rx
  cmp -s "$work/src/ten.bin" "$work/small/out/ten.bin" && ok || bad "disk full: ten.bin"
  cmp -s "$work/src/tiny.bin" "$work/small/out/tiny.bin" && ok || bad "disk full: tiny.bin"
  has "$work/rx3.log" 'refused file "nine.bin": not enough free space: 9,437,184 bytes announced' \
    "disk full at announce"
  # Mid-file: 5 MB free, nine.bin is refused... so take a 5 MB file and fill the disk while it
  # arrives slowly; it fails, its partial data is removed, and the next file arrives.
  rm -f "$work/small/out/ten.bin"
  head -c $((5 << 20)) /dev/urandom > "$work/src/five.bin"
  p=$(port)
  start_rx "$work/small/out" "$work/rx4.log" --buffer-mb 64 --write-buffers 8 --direct-io off
  "$send_bin" "$work/src/five.bin" --dest "127.0.0.1:$p" --rate 2 > "$work/tx4.log" 2>&1 &
  sender=$!
  for _ in $(seq 100); do grep -q "five.bin, Size" "$work/rx4.log" && break; sleep 0.05; done
  head -c $((16 << 20)) /dev/zero > "$work/small/filler" 2> /dev/null
  wait "$sender"
  wait_rx
  has "$work/rx4.log" "five.bin FAILED: write error: No space left on device" "disk full mid-file"
  has "$work/rx4.log" "partial data removed (disk full)" "disk full mid-file"
  ls "$work/small/out/.ddft/failed/"*five.bin 2> /dev/null && bad "disk full: partial data kept" || ok
  ls "$work/small/out/.ddft/failed/"*five.bin.json > /dev/null 2>&1 && ok || bad "disk full: no record"
  # A .ddft-* name is a temp file left (the receiver's own state is in .ddft/).
  find "$work/small/out" -name '.ddft-*' | grep -q . &&
    bad "disk full: temp file left" || ok
  rm -f "$work/small/filler"
  p=$(port)
  start_rx "$work/small/out" "$work/rx5.log" --buffer-mb 64 --write-buffers 8
  "$send_bin" "$work/src/tiny.bin" --dest "127.0.0.1:$p" > "$work/tx5.log" 2>&1
  wait_rx
  has "$work/rx5.log" "tiny.bin.*B2B Passed" "after the disk was freed"
  umount "$work/small"
else
  echo "SKIP disk-full checks: need root and a tmpfs mount"
fi

# 3. Temporary files left by an earlier run are moved to the failed folder at start-up.
mkdir -p "$work/out6/sub"
echo partial > "$work/out6/sub/.ddft-00000000000000ab-3.part"
echo partial > "$work/out6/.ddft-00000000000000ab-4.part"
ln -s /etc "$work/out6/link"  # a symlink is never followed
p=$(port)
start_rx "$work/out6" "$work/rx6.log" --buffer-mb 64 --write-buffers 8
kill -TERM "$rx"
wait_rx
has "$work/rx6.log" "sub/.ddft-00000000000000ab-3.part: left incomplete by an earlier run" "leftovers"
[[ -z $(find "$work/out6" -path "$work/out6/.ddft" -prune -o -name '.ddft-*' -print) ]] && ok ||
  bad "leftovers still in place"
grep -l '"reason": "left by an earlier run' "$work/out6/.ddft/failed/"*.json 2> /dev/null | wc -l |
  grep -q '^2$' && ok || bad "leftovers: want 2 records"
grep -q '"session": "00000000000000ab"' "$work/out6/.ddft/failed/"*ab-3*.json 2> /dev/null ||
  grep -q '"file_id": 3' "$work/out6/.ddft/failed/"*.json && ok || bad "leftovers: record lacks its id"

echo "$pass passed, $failures failed"
((failures == 0))
