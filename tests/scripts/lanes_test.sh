#!/usr/bin/env bash
# Lanes end to end, the real programs on loopback:
#  1. four lanes, the third (lane 2) through dd_linksim, which loses everything for 5 seconds
#     mid-transfer: every file arrives byte for byte or has a record naming lane 2 and its
#     missing ranges; nothing damaged under a final name; every failed file used lane 2;
#  2. three lanes, the third dead from the start (nobody listens where the sender sends it):
#     the files it carried are named in records (lane 2), the others arrive; and four lanes to
#     one host whose receiver listens on three: lane 3's files are named, none dropped;
#  3. a 2 GiB file striped over four lanes arrives byte for byte: plain, sealed (--key-file),
#     and with FEC (at 50 MB/s per lane: a test of correctness on a busy machine, not of speed;
#     scripts/bench_lanes.sh measures that). With DDFT_TEST_SMALL=1 (the sanitizer pass, where
#     the normal pass has run the 2 GiB file already) the file is 256 MiB.
# Usage: lanes_test.sh DD_FILE_SEND DD_FILE_RECEIVE DD_LINKSIM
set -uo pipefail
send_bin=$1 recv_bin=$2 linksim_bin=$3
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
# A base port with `n` free ports after it (bind-checked by python).
ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
while True:
    base = random.randint(20000, 60000 - n)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", p))
            socks.append(s)
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
EOF
}
# Waits (at most 15 s) for the receiver's start line in its log.
wait_receiving() {
  for _ in $(seq 150); do
    grep -q "receiving on" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# Waits for the background process $1 (at most $2 seconds); its exit status goes to $status
# (124: it was killed).
wait_for() {
  local pid=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"
      status=$?
      return
    fi
    sleep 0.1
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  status=124
}
# check_outcomes SRC OUT LANE: every source file is in OUT byte for byte, or has a failure
# record in OUT/.ddft/failed naming lane LANE and its missing ranges. Prints "delivered failed".
check_outcomes() {
  python3 - "$1" "$2" "$3" <<'EOF'
import filecmp, glob, json, os, sys
src, out, lane = sys.argv[1], sys.argv[2], int(sys.argv[3])
records = {}
for path in glob.glob(os.path.join(out, ".ddft", "failed", "*.json")):
    with open(path) as f:
        r = json.load(f)
    records[r["name"]] = r
delivered = failed = 0
problems = []
for name in sorted(os.listdir(src)):
    got = os.path.join(out, name)
    if os.path.exists(got):
        if not filecmp.cmp(os.path.join(src, name), got, shallow=False):
            problems.append(f"{name}: damaged under its final name")
        delivered += 1
        if name in records:
            problems.append(f"{name}: delivered and recorded as failed")
        continue
    r = records.get(name)
    if r is None:
        problems.append(f"{name}: neither delivered nor recorded")
        continue
    failed += 1
    if r.get("lane") != lane:
        problems.append(f"{name}: record names lane {r.get('lane')}, not {lane}: {r['reason']}")
    if not r.get("missing_ranges"):
        problems.append(f"{name}: record names no missing range")
for p in problems:
    print("PROBLEM", p)
print(delivered, failed)
EOF
}

# --- 1. four lanes, lane 2 through an outage of 5 s --------------------------------------------
mkdir -p "$work/src1" "$work/out1"
for i in $(seq -w 1 64); do head -c $((1 << 20)) /dev/urandom > "$work/src1/f$i.bin"; done
base=$(ports 5)
link=$((base + 4))
"$recv_bin" --listen "127.0.0.1:$base" --lanes 4 --output "$work/out1" --once \
  --buffer-mb 128 --write-buffers 16 --log-file "$work/rx1.log" > /dev/null 2>&1 &
rx=$!
pids+=("$rx")
"$linksim_bin" --listen "127.0.0.1:$link" --forward "127.0.0.1:$((base + 2))" --outage 1.5 5 \
  --quiet > "$work/link1.log" 2>&1 &
pids+=("$!")
wait_receiving "$work/rx1.log" || bad "outage: the receiver did not start: $(cat "$work/rx1.log")"
sleep 0.2
# 2 MB/s per lane: 64 MiB over four lanes takes about 8 s, the outage 1.5-6.5 s after lane 2's
# first datagram.
"$send_bin" "$work/src1/" --dest "127.0.0.1:$base" --dest "127.0.0.1:$((base + 1))" \
  --dest "127.0.0.1:$link" --dest "127.0.0.1:$((base + 3))" --rate 2 > "$work/tx1.log" 2>&1 ||
  bad "outage: the sender failed: $(tail -3 "$work/tx1.log")"
wait_for "$rx" 60
[[ $status == 1 ]] && ok || bad "outage: receiver exit $status (want 1: files failed)"
grep -q "lost in the outage" <(kill -TERM "${pids[-1]}"; sleep 0.5; cat "$work/link1.log") &&
  ok || bad "outage: dd_linksim lost nothing: $(cat "$work/link1.log")"
read -r delivered failed < <(check_outcomes "$work/src1" "$work/out1" 2 | tee "$work/check1" |
  tail -1)
grep PROBLEM "$work/check1" && bad "outage: $(grep -c PROBLEM "$work/check1") problem(s)" || ok
[[ ${failed:-0} -ge 1 && ${delivered:-0} -ge 32 && $((delivered + failed)) == 64 ]] && ok ||
  bad "outage: delivered ${delivered:-?}, failed ${failed:-?} of 64"
echo "outage on lane 2 of 4: $delivered delivered, $failed failed (each naming lane 2)"

# --- 2. three lanes, the third dead from the start ---------------------------------------------
mkdir -p "$work/src2" "$work/out2"
for i in $(seq -w 1 30); do head -c 100000 /dev/urandom > "$work/src2/g$i.bin"; done
base=$(ports 4)
"$recv_bin" --listen "127.0.0.1:$base" --lanes 3 --output "$work/out2" --once --file-timeout 3 \
  --buffer-mb 64 --write-buffers 16 --log-file "$work/rx2.log" > /dev/null 2>&1 &
rx=$!
pids+=("$rx")
wait_receiving "$work/rx2.log" || bad "dead lane: the receiver did not start"
# Lane 2 goes to a port nobody listens on (base + 3); the receiver's third port gets nothing.
"$send_bin" "$work/src2/" --dest "127.0.0.1:$base" --dest "127.0.0.1:$((base + 1))" \
  --dest "127.0.0.1:$((base + 3))" --rate 20 > "$work/tx2.log" 2>&1 ||
  bad "dead lane: the sender failed: $(tail -3 "$work/tx2.log")"
wait_for "$rx" 60
[[ $status == 1 ]] && ok || bad "dead lane: receiver exit $status (want 1)"
read -r delivered failed < <(check_outcomes "$work/src2" "$work/out2" 2 | tee "$work/check2" |
  tail -1)
grep PROBLEM "$work/check2" && bad "dead lane: problems" || ok
[[ ${failed:-0} -ge 1 && ${delivered:-0} -ge 1 && $((delivered + failed)) == 30 ]] && ok ||
  bad "dead lane: delivered ${delivered:-?}, failed ${failed:-?} of 30"
grep -q "no packet of it reached this receiver" "$work/out2/.ddft/failed/"*.json && ok ||
  bad "dead lane: no record says the lane never came up"
echo "dead lane 2 of 3: $delivered delivered, $failed named as lost"

# --- 2b. four lanes to one host, the receiver listening on three of them ------------------------
mkdir -p "$work/src2b" "$work/out2b"
for i in $(seq -w 1 40); do head -c 50000 /dev/urandom > "$work/src2b/h$i.bin"; done
base=$(ports 4)
"$recv_bin" --listen "127.0.0.1:$base" --lanes 3 --output "$work/out2b" --once \
  --buffer-mb 64 --write-buffers 16 --log-file "$work/rx2b.log" > /dev/null 2>&1 &
rx=$!
pids+=("$rx")
wait_receiving "$work/rx2b.log" || bad "three of four: the receiver did not start"
"$send_bin" "$work/src2b/" --dest "127.0.0.1:$base" --lanes 4 --rate 20 > "$work/tx2b.log" 2>&1 ||
  bad "three of four: the sender failed: $(tail -3 "$work/tx2b.log")"
wait_for "$rx" 60
[[ $status == 1 ]] && ok || bad "three of four: receiver exit $status (want 1)"
read -r delivered failed < <(check_outcomes "$work/src2b" "$work/out2b" 3 | tee "$work/check2b" |
  tail -1)
grep PROBLEM "$work/check2b" && bad "three of four: problems" || ok
[[ ${failed:-0} -ge 1 && ${delivered:-0} -ge 1 && $((delivered + failed)) == 40 ]] && ok ||
  bad "three of four: delivered ${delivered:-?}, failed ${failed:-?} of 40"
grep -q "goes to this receiver's host, but no --listen here takes it" \
  "$work/out2b/.ddft/failed/"*.json && ok || bad "three of four: no record names the unheard lane"
echo "receiver on 3 of 4 lanes: $delivered delivered, $failed named (lane 3), 0 lost"

# --- 3. a 2 GiB file striped over four lanes ---------------------------------------------------
huge_mb=2048
[[ "${DDFT_TEST_SMALL:-0}" == 1 ]] && huge_mb=256
mkdir -p "$work/src3"
head -c $((huge_mb << 20)) /dev/urandom > "$work/src3/huge.bin"
(umask 077; head -c 32 /dev/urandom > "$work/link.key")
striped_run() {  # LABEL [options for both sides...]
  local label=$1
  shift
  local out=$work/out3-$label
  mkdir -p "$out"
  local p
  p=$(ports 4)
  "$recv_bin" --listen "127.0.0.1:$p" --lanes 4 --output "$out" --once --buffer-mb 1024 \
    --log-file "$work/rx3-$label.log" "${@:1:$rx_args}" > /dev/null 2>&1 &
  local r=$!
  pids+=("$r")
  wait_receiving "$work/rx3-$label.log" || bad "striped $label: the receiver did not start"
  "$send_bin" "$work/src3/huge.bin" --dest "127.0.0.1:$p" --lanes 4 --rate 50 \
    "${@:$((rx_args + 1))}" > "$work/tx3-$label.log" 2>&1 ||
    bad "striped $label: the sender failed: $(tail -3 "$work/tx3-$label.log")"
  wait_for "$r" 120
  [[ $status == 0 ]] && ok || bad "striped $label: receiver exit $status: $(grep -E 'Error|FAILED' \
    "$work/rx3-$label.log" | head -3)"
  cmp -s "$work/src3/huge.bin" "$out/huge.bin" && ok || bad "striped $label: not byte-identical"
  grep -q "striped" "$work/tx3-$label.log" || grep -q "4 lanes" "$work/tx3-$label.log" ||
    bad "striped $label: the sender did not say it drove 4 lanes"
  echo "striped $huge_mb MiB over 4 lanes ($label): $(grep -o 'Passed.*' "$work/rx3-$label.log" |
    head -1)"
  rm -rf "$out"
}
rx_args=0 striped_run plain
rx_args=2 striped_run sealed --key-file "$work/link.key" --key-file "$work/link.key"
rx_args=0 striped_run fec --fec 64:4

echo "lanes: $pass passed, $failures failed"
[[ $failures == 0 ]]
