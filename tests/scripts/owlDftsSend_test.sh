#!/usr/bin/env bash
# Tests of scripts/owlDftsSend: seed 004's excerpt pasted in gives the expected command, unset
# OPT_FSINTERVAL/OPT_FSDELAY give DFTS's 32/1000, bad values are refused, and a real transfer
# through the script arrives.
# Usage: owlDftsSend_test.sh SCRIPT DD_FILE_SEND DD_FILE_RECEIVE
set -uo pipefail
script=$1 send_bin=$2 recv_bin=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
pass=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then
    pass=$((pass + 1))
  else
    failures=$((failures + 1))
    printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"
  fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then pass=$((pass + 1)); else
    failures=$((failures + 1))
    printf 'FAIL %s\n  missing: %s\n  in:      %s\n' "$1" "$2" "$3"
  fi
}

# Seed 004's "Summary of changes" excerpt, verbatim.
excerpt='######################################################################
#
# Default DFTS (required) parameters
#
######################################################################
DEFAULT_VERTYPE="NONE"
BUFF_FULL_DELAY=0
INTRA_PKT_INTERVAL=0
INTRA_PKT_DELAY=0
EOF_DELAY=0
REPORT_OPTION=S
FILE_LOCK=N
######################################
# DFTS (optional) parameters
#####################################
# more pacing parameters
OPT_FSINTERVAL=" -fsinterval 0"
OPT_FSDELAY=" -fsdelay 0"
OPT_SLEEPALG="-NOSLEEPALG"'

# paste EXCERPT: a copy of the script whose DFTS block is replaced by EXCERPT.
paste_block() {
  local out=$work/owlDftsSend.pasted
  # Everything from the first banner line up to the OPT_SLEEPALG line is replaced by the block.
  awk -v block="$1" '
    /^######################################################################$/ && !started { started = 1; skipping = 1 }
    skipping && /^OPT_SLEEPALG=/ { print block; skipping = 0; next }
    !skipping { print }' "$script" > "$out"
  chmod +x "$out"
  echo "$out"
}

run_dry() {  # run_dry SCRIPT_COPY CONF -> the dry-run command line
  DD_FILE_SEND=/usr/bin/dd_file_send OWL_DFTS_CONF="$2" "$1" --dry-run /data/out
}

base="/usr/bin/dd_file_send --dest 127.0.0.1:47555"
common="--buff-full-delay 0 --intra-pkt-interval 0 --intra-pkt-delay 0 --eof-delay 0 --report S --file-lock N --sleep-alg"

# 1. The seed's tuned excerpt pasted in: pacing off, hash off, no sleep algorithm.
s=$(paste_block "$excerpt")
check "excerpt" "$base --verify none $common -fsinterval 0 -fsdelay 0 -NOSLEEPALG -- /data/out" \
  "$(run_dry "$s" /nonexistent)"

# 2. The script as shipped carries the same block.
check "shipped" "$base --verify none $common -fsinterval 0 -fsdelay 0 -NOSLEEPALG -- /data/out" \
  "$(run_dry "$script" /nonexistent)"

# 3. An unchanged DFTS script: OPT_FSINTERVAL/OPT_FSDELAY not set -> DFTS's 32 MB / 1000 ms,
#    and an empty OPT_SLEEPALG leaves the sleep algorithm on.
printf 'unset OPT_FSINTERVAL\nOPT_FSDELAY=""\nOPT_SLEEPALG=""\nDEFAULT_VERTYPE="B2B"\n' > "$work/defaults.conf"
check "dfts defaults" "$base --verify b2b $common -fsinterval 32 -fsdelay 1000 -- /data/out" \
  "$(run_dry "$script" "$work/defaults.conf")"

# 4. The prose forms of seed 004 (" -fsinternal 100", " -NOSLEEPALG") pass through as written.
printf 'OPT_FSINTERVAL=" -fsinternal 100"\nOPT_SLEEPALG=" -NOSLEEPALG"\nINTRA_PKT_INTERVAL=10\nINTRA_PKT_DELAY=2\n' > "$work/prose.conf"
contains "prose forms" "--intra-pkt-interval 10 --intra-pkt-delay 2" "$(run_dry "$script" "$work/prose.conf")"
contains "prose forms 2" "-fsinternal 100 -fsdelay 0 -NOSLEEPALG -- /data/out" "$(run_dry "$script" "$work/prose.conf")"

# 5. The device transport.
printf 'DDFT_TRANSPORT=device\nDDFT_DEVICE=/dev/owl0\n' > "$work/device.conf"
contains "device" "/usr/bin/dd_file_send --transport device --device /dev/owl0 --verify none" \
  "$(run_dry "$script" "$work/device.conf")"

# 6. Bad values: one clear line, exit 2, nothing run.
for bad in 'DEFAULT_VERTYPE="MD5"' 'EOF_DELAY=soon' 'FILE_LOCK=maybe' 'REPORT_OPTION=X'; do
  echo "$bad" > "$work/bad.conf"
  out=$(DD_FILE_SEND=/bin/false OWL_DFTS_CONF="$work/bad.conf" "$script" /data/out 2>&1)
  rc=$?
  check "bad value exit ($bad)" 2 "$rc"
  contains "bad value message ($bad)" "owlDftsSend: " "$out"
done
out=$("$script" 2>&1)
check "no files exit" 2 "$?"
contains "no files message" "usage: owlDftsSend" "$out"

# 7. A real transfer through the script, sleep algorithm on: the receiver's Info: line shows the
#    pause (a 101 MiB file pauses 3 s).
mkdir -p "$work/src/sub" "$work/out"
head -c $((101 * 1048576)) /dev/urandom > "$work/src/big.bin"
head -c 5000 /dev/urandom > "$work/src/sub/small.txt"
port=$((40000 + RANDOM % 20000))
"$recv_bin" --listen "127.0.0.1:$port" --output "$work/out" --once --buffer-mb 128 \
  > "$work/receive.log" 2>&1 &
rx=$!
for _ in $(seq 100); do grep -q "receiving on" "$work/receive.log" && break; sleep 0.1; done
printf 'DDFT_DEST="127.0.0.1:%s"\nOPT_SLEEPALG=""\nDEFAULT_VERTYPE=B2B\n' "$port" > "$work/real.conf"
DD_FILE_SEND="$send_bin" OWL_DFTS_CONF="$work/real.conf" "$script" "$work/src/" > "$work/send.log" 2>&1
check "transfer: sender exit" 0 "$?"
timeout 60 tail --pid=$rx -f /dev/null
wait $rx
check "transfer: receiver exit" 0 "$?"
cmp -s "$work/src/big.bin" "$work/out/big.bin" && cmp -s "$work/src/sub/small.txt" "$work/out/sub/small.txt"
check "transfer: files identical" 0 "$?"
log=$(cat "$work/receive.log")
contains "transfer: pause in Info:" "Info: big.bin, Size: 105,906,176 (bytes) . . . receiving (send pausing 3 seconds)" "$log"
contains "transfer: verified" "B2B Passed" "$log"

echo "$pass passed, $failures failed"
((failures == 0))
