#!/usr/bin/env bash
# Reconciliation over a real run with injected failures: two sender sessions with --manifest, the
# first to a port nobody listens on, the second to a real receiver that loses a data packet of one
# file (the sender's test hook), refuses an oversized one and filters a third; one more file is
# held under a writer's lock so the sender cannot read it, one named does not exist, and a
# symbolic link in a folder sent is skipped (--symlinks skip, the default).
# dd_reconcile must name each outcome.
# Usage: reconcile_run_test.sh DD_RECONCILE DD_FILE_SEND DD_FILE_RECEIVE
set -uo pipefail
reconcile=$1 send_bin=$2 recv_bin=$3
work=$(mktemp -d)
rx= holder=
cleanup() {
  [[ -n "$rx" ]] && kill "$rx" 2>/dev/null
  [[ -n "$holder" ]] && { pkill -P "$holder"; kill "$holder"; } 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
port() { echo $((20000 + RANDOM % 30000)); }

mkdir -p "$work/src/sub" "$work/out" "$work/ghost"
head -c 300000 /dev/urandom > "$work/src/lost.bin"     # sent first: the hook drops its 3rd packet
head -c 200000 /dev/urandom > "$work/src/good.bin"
head -c 150000 /dev/urandom > "$work/src/sub/also good.bin"
head -c $((3 << 20)) /dev/urandom > "$work/src/big.bin"  # over the receiver's --max-file-size
head -c 50000 /dev/urandom > "$work/src/draft.tmp"     # the receiver's --exclude '*.tmp'
head -c 1000 /dev/urandom > "$work/src/locked.bin"     # a writer holds it: not sent
head -c 4000 /dev/urandom > "$work/ghost/ghost.bin"    # session 1: nobody receives it
echo elsewhere > "$work/elsewhere.dat"
ln -s ../../elsewhere.dat "$work/src/sub/link.bin"      # skipped: named, counted, not sent
manifest=$work/sent.jsonl

# Session 1: to a port with no receiver (UDP: the sender cannot know).
"$send_bin" "$work/ghost/ghost.bin" --dest "127.0.0.1:$(port)" --manifest "$manifest" \
  > "$work/tx1.log" 2>&1 || bad "session 1: sender exit $?: $(cat "$work/tx1.log")"

# Session 2: a real receiver.
p=$(port)
"$recv_bin" --listen "127.0.0.1:$p" --output "$work/out" --once --log-file "$work/rx.log" \
  --file-timeout 2 --max-file-size 1MiB --exclude '*.tmp' --buffer-mb 96 --write-buffers 16 > /dev/null 2>&1 &
rx=$!
for _ in $(seq 100); do grep -q "receiving on" "$work/rx.log" 2>/dev/null && break; sleep 0.05; done
# Its output goes nowhere: a child holding the test's stdout open would keep ctest waiting.
flock --exclusive "$work/src/locked.bin" sleep 60 > /dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do flock --nonblock --shared "$work/src/locked.bin" true || break; sleep 0.05; done
"$send_bin" "$work/src/lost.bin" "$work/src/good.bin" "$work/src/sub" "$work/src/big.bin" \
  "$work/src/draft.tmp" "$work/src/locked.bin" "$work/src/missing.bin" --dest "127.0.0.1:$p" --manifest "$manifest" \
  --file-lock Y --lock-timeout 0 --test-drop-data 2 > "$work/tx2.log" 2>&1
[[ $? -eq 1 ]] && ok || bad "session 2: sender exit (want 1: locked.bin not sent)"
wait "$rx"
[[ $? -eq 1 ]] && ok || bad "receiver exit (want 1: files failed or were refused)"
rx=
pkill -P "$holder" 2>/dev/null  # the sleep flock runs: it holds the lock
kill "$holder" 2>/dev/null
holder=

[[ $(wc -l < "$manifest") -eq 9 ]] && ok || bad "manifest has $(wc -l < "$manifest") lines, want 9"
grep -q '"path":"sub/link.bin","size":0,.*"status":"skipped","reason":"skipping symbolic link' \
  "$manifest" && ok || bad "no skipped line for the link: $(cat "$manifest")"
grep -q "Warn: skipping symbolic link '$work/src/sub/link.bin' (to '../../elsewhere.dat'; --symlinks skip)" \
  "$work/tx2.log" && ok || bad "the link is not named: $(cat "$work/tx2.log")"
grep -q "done: .* datagrams, 1 symbolic link(s) skipped" "$work/tx2.log" && ok ||
  bad "the summary does not count the link: $(cat "$work/tx2.log")"

"$reconcile" "$manifest" "$work/rx.log" > "$work/report.txt" 2>&1
rc=$?
[[ $rc -eq 1 ]] && ok || bad "dd_reconcile exit $rc (want 1)"
cp "$work/report.txt" "${DDFT_RECONCILE_REPORT:-/dev/null}" 2>/dev/null
outcome() {  # PATH OUTCOME [REASON-FRAGMENT]: the report's line for PATH says it
  local line
  line=$(grep -F -- "$1" "$work/report.txt" | head -1)
  [[ "$line" == *"$2"* ]] && ok || bad "$1: want '$2', report line: '$line'"
  [[ -z "${3:-}" || "$line" == *"$3"* ]] && ok || bad "$1: want reason '$3', report line: '$line'"
}
outcome "good.bin" "delivered"
outcome "sub/also good.bin" "delivered"
outcome "lost.bin" "failed" "missing"
outcome "big.bin" "refused" "max-file-size"
outcome "draft.tmp" "filtered" "--exclude '*.tmp'"
outcome "locked.bin" "not sent" "lock"
outcome "ghost.bin" "never seen"
outcome "missing.bin" "not sent" "No such file"  # named on the command line, never there
outcome "sub/link.bin" "skipped" "--symlinks skip"

# The same in JSON Lines, for machines: one object per file, outcome by outcome.
"$reconcile" --json "$manifest" "$work/rx.log" > "$work/report.jsonl" 2>&1
python3 - "$work/report.jsonl" <<'PY' && ok || bad "--json report: $(cat "$work/report.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
files = {r["path"]: r["outcome"] for r in rows if "path" in r and "outcome" in r}
want = {"good.bin": "delivered", "sub/also good.bin": "delivered", "lost.bin": "failed",
        "big.bin": "refused", "draft.tmp": "filtered", "locked.bin": "not sent",
        "ghost.bin": "never seen", "missing.bin": "not sent", "sub/link.bin": "skipped"}
bad = {p: (files.get(p), o) for p, o in want.items() if files.get(p) != o}
sys.exit(1 if bad else 0)
PY

echo "reconcile_run_test: $pass passed, $failures failed"
[[ $failures -eq 0 ]]
